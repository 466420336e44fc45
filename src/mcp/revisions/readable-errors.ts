import { joinProblems } from '../../core/validation/bounded-refusal';

/** JSON-RPC's codes for a request the server could not read the params of, and for its own fault. */
const INVALID_PARAMS = -32602;
const INTERNAL_ERROR = -32603;

/** One problem zod found, as its issues (and the dump an error's message is made of) describe it. */
export interface ValidationIssue {
  code?: string;
  path?: readonly PropertyKey[];
  message?: string;
  expected?: string;
  minimum?: number | bigint | string;
  maximum?: number | bigint | string;
  inclusive?: boolean;
  origin?: string;
  values?: readonly unknown[];
  keys?: readonly string[];
  format?: string;
}

/** Longest path, value list or wording one sentence quotes; the client chose the keys a path may name. */
const MAX_QUOTED = 80;
/** Longest dump read back into sentences; past it (zod made one issue per bad element of a huge value) it is not parsed. */
const MAX_DUMP_CHARS = 1 << 20;

const quoted = (text: string) => (text.length > MAX_QUOTED ? `${text.slice(0, MAX_QUOTED)}...` : text);

const list = (items: readonly unknown[], show: (item: unknown) => string) => quoted(items.map(show).join(', '));

/** What an `invalid_type` issue's `expected` asks for, as the end of "must be ...". */
const KINDS: Record<string, string> = {
  string: 'a string',
  number: 'a number',
  int: 'an integer',
  bigint: 'an integer',
  boolean: 'true or false',
  object: 'an object',
  record: 'an object',
  map: 'an object',
  array: 'an array',
  tuple: 'an array',
  set: 'an array',
  null: 'null',
};

/** "must be at least 3", "must be at most 10 characters long", "must hold at least 1 item"... for a size or range issue. */
function bound(issue: ValidationIssue, least: boolean): string {
  const limit = String(least ? issue.minimum : issue.maximum);
  const exclusive = issue.inclusive === false;
  const words = least ? (exclusive ? 'more than' : 'at least') : exclusive ? 'less than' : 'at most';
  if (issue.origin === 'string') return limit === '1' && least && !exclusive ? 'must not be empty' : `must be ${words} ${limit} characters long`;
  if (issue.origin === 'array' || issue.origin === 'set') return `must hold ${words} ${limit} ${limit === '1' ? 'item' : 'items'}`;
  return `must be ${words} ${limit}`;
}

/** One issue as one sentence: `arguments.count must be at most 10`. */
function sentenceOf(issue: ValidationIssue, whole: string): string {
  const where = quoted((issue.path ?? []).map(String).join('.')) || whole;
  switch (issue.code) {
    case 'invalid_type':
      if (/received undefined$/.test(issue.message ?? '')) return `${where} is required`;
      return `${where} must be ${KINDS[issue.expected ?? ''] ?? `of type ${issue.expected}`}`;
    case 'too_small':
      return `${where} ${bound(issue, true)}`;
    case 'too_big':
      return `${where} ${bound(issue, false)}`;
    case 'invalid_value': {
      const values = issue.values ?? [];
      const show = (value: unknown) => JSON.stringify(value) ?? String(value);
      return values.length === 1 ? `${where} must be ${quoted(show(values[0]))}` : `${where} must be one of: ${list(values, show)}`;
    }
    case 'unrecognized_keys':
      return `${where} has keys it does not take: ${list(issue.keys ?? [], String)}`;
    case 'invalid_union':
      return `${where} matches none of the forms it may take`;
    case 'invalid_format':
      return `${where} must be a valid ${issue.format ?? 'value'}`;
    default:
      return `${where} is invalid: ${quoted((issue.message ?? 'invalid').replace(/^Invalid input: /, ''))}`;
  }
}

/**
 * Validation issues as one sentence per problem, `; `-joined and bounded (at most a few, see
 * {@link joinProblems}): `name must be a string; arguments must be an object`. `whole` names
 * what an issue without a path is about.
 */
export function describeIssues(issues: readonly ValidationIssue[], whole: string): string {
  return joinProblems(issues.map((issue) => sentenceOf(issue, whole)));
}

/** The issues a zod error's message lists (`JSON.stringify(issues, null, 2)`), when it is one. */
function issuesOfDump(dump: string): ValidationIssue[] | undefined {
  if (dump.length > MAX_DUMP_CHARS) return undefined;
  try {
    const issues: unknown = JSON.parse(dump);
    const valid =
      Array.isArray(issues) &&
      issues.length > 0 &&
      issues.every((issue) => issue !== null && typeof issue === 'object' && Array.isArray((issue as ValidationIssue).path));
    return valid ? (issues as ValidationIssue[]) : undefined;
  } catch {
    return undefined;
  }
}

interface JsonRpcError {
  code: number;
  message: string;
  data?: unknown;
}

/**
 * A JSON-RPC error whose message ends in a zod dump (what both MCP SDKs send for a request
 * their schemas refuse: `Invalid tools/call request: [\n  {\n    "expected": ...`), with the
 * dump made one sentence per problem. A dump alone is the SDKs' parse of a request's params
 * failing before any handler ran, which they answer -32603 (a fault of the server): when its
 * every issue is about the params, it is the client's -32602 "Invalid params". Any other error
 * is returned as it is.
 */
export function readableError<T extends JsonRpcError>(error: T): T {
  const { message } = error;
  if (!message.endsWith('\n]')) return error;
  const start = message.indexOf('[\n');
  const issues = start < 0 ? undefined : issuesOfDump(message.slice(start));
  if (!issues) return error;
  const aboutParams = issues.every(({ path }) => path?.[0] === 'params');
  const relative = aboutParams ? issues.map((issue) => ({ ...issue, path: issue.path!.slice(1) })) : issues;
  const prefix = message.slice(0, start) || (aboutParams ? 'Invalid params: ' : 'Invalid message: ');
  const code = error.code === INTERNAL_ERROR && start === 0 && aboutParams ? INVALID_PARAMS : error.code;
  return { ...error, code, message: `${prefix}${describeIssues(relative, 'params')}` };
}

/** What both SDKs' transports have in common: they send one JSON-RPC message at a time. */
interface SendingTransport {
  send(message: never, ...rest: never[]): Promise<void>;
}

/**
 * Makes every JSON-RPC error `transport` sends go through {@link readableError}; the transport
 * is changed in place, since the SDK's server sets its callbacks on the very object it is given.
 * Every other message passes as it is, for the cost of one property read.
 */
export function withReadableErrors<T extends SendingTransport>(transport: T): T {
  const send = transport.send.bind(transport) as (message: unknown, ...rest: unknown[]) => Promise<void>;
  transport.send = ((message: { error?: JsonRpcError } | null, ...rest: unknown[]) => {
    const error = message?.error;
    if (error === undefined || typeof error.message !== 'string') return send(message, ...rest);
    const readable = readableError(error);
    return send(readable === error ? message : { ...message, error: readable }, ...rest);
  }) as T['send'];
  return transport;
}
