import { JSONRPCErrorResponse, ProtocolError, ProtocolErrorCode, RequestId } from '@modelcontextprotocol/client';
import type { OversizedLine } from './bounded-lines';

/** The setting that bounds an upstream's answers, named in every message about one dropped. */
const MAX_RESULT_SETTING = 'MCP_UPSTREAM_MAX_RESULT_BYTES';

/** What a dropped answer's stand-in carries, so the tool sync can word the call's failure. */
export interface OversizedAnswer {
  maxBytes: number;
  /** The whole answer's size, when it was read to its end (or declared). */
  bytes?: number;
}

/** A message an upstream sent that was not held, as the connection logs it. */
export interface DroppedMessage extends OversizedAnswer {
  /** The call it answered, which fails; none when it answered no call that could be told. */
  id?: RequestId;
}

const DATA_KEY = 'oversizedAnswer';

const PRIMITIVE = String.raw`"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null`;
/** One top-level member with a scalar value, then a comma: how JSON-RPC members before the big one read. */
const SCALAR_MEMBER = new RegExp(String.raw`\s*"([^"\\]*)"\s*:\s*(${PRIMITIVE})\s*,`, 'y');
const MEMBER_NAME = /\s*"([^"\\]*)"\s*:/y;
/** The top-level `id` as the last member: the object closes right after it, so it cannot be a nested one. */
const TRAILING_ID = /"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")\s*\}\s*$/;

/** The scalar members at the start of a JSON object, and the name of the first member that is not one. */
function leadingMembers(head: string): { scalars: Map<string, string>; firstLarge?: string } {
  const scalars = new Map<string, string>();
  const open = /^\s*\{/.exec(head);
  if (!open) return { scalars };
  let position = open[0].length;
  for (;;) {
    SCALAR_MEMBER.lastIndex = position;
    const member = SCALAR_MEMBER.exec(head);
    if (!member) break;
    scalars.set(member[1], member[2]);
    position = SCALAR_MEMBER.lastIndex;
  }
  MEMBER_NAME.lastIndex = position;
  return { scalars, firstLarge: MEMBER_NAME.exec(head)?.[1] };
}

function parseId(text: string | undefined): RequestId | undefined {
  if (text === undefined) return undefined;
  try {
    const id: unknown = JSON.parse(text);
    return typeof id === 'string' || typeof id === 'number' ? id : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The id of the request a JSON-RPC message answers, read from the two ends of a message too
 * large to parse; `undefined` when it is no response (a request or notification, whose large
 * member is `params`) or its id is not at either end. Servers put the id before the result
 * (Python's SDK: `{"jsonrpc", "id", "result"}`) or after it (TypeScript's: `{"result",
 * "jsonrpc", "id"}`).
 */
export function answeredRequestId(head: string, tail: string): RequestId | undefined {
  const { scalars, firstLarge } = leadingMembers(head);
  if (scalars.has('method') || (firstLarge !== 'result' && firstLarge !== 'error')) return undefined;
  return parseId(scalars.get('id')) ?? parseId(TRAILING_ID.exec(tail)?.[1]);
}

/** {@link answeredRequestId} of a line held only by its ends (`prefix`: an event stream's `data:`). */
export function answeredRequestIdOfLine(line: OversizedLine, prefix = ''): RequestId | undefined {
  const head = line.head.toString('utf8');
  if (!head.startsWith(prefix)) return undefined;
  return answeredRequestId(head.slice(prefix.length), line.tail.toString('utf8').replace(/\r$/, ''));
}

/** Why an answer was dropped, in the words every caller and log reads. */
export function describeOversizedAnswer({ maxBytes, bytes }: OversizedAnswer): string {
  const size = bytes === undefined ? 'the answer' : `the answer of ${bytes} bytes`;
  return `${size} is over ${MAX_RESULT_SETTING} (${maxBytes} bytes) and was dropped`;
}

/** What the stand-in's `data` carries: the bound and, when known, the size. */
function answerData({ maxBytes, bytes }: OversizedAnswer): Record<string, OversizedAnswer> {
  return { [DATA_KEY]: bytes === undefined ? { maxBytes } : { maxBytes, bytes } };
}

/**
 * The answer that stands in for one too large to hold: a JSON-RPC error for the same request,
 * so the SDK's client ends that call (and only that call) as the upstream had refused it.
 */
export function oversizedAnswer(id: RequestId, answer: OversizedAnswer): JSONRPCErrorResponse {
  return { jsonrpc: '2.0', id, error: { code: ProtocolErrorCode.InternalError, message: describeOversizedAnswer(answer), data: answerData(answer) } };
}

/** {@link oversizedAnswer} as an error to throw, for a request whose id cannot be read. */
export function oversizedAnswerError(answer: OversizedAnswer): ProtocolError {
  return new ProtocolError(ProtocolErrorCode.InternalError, describeOversizedAnswer(answer), answerData(answer));
}

/** The dropped answer a call failed with, when its error is {@link oversizedAnswer}'s stand-in. */
export function oversizedAnswerOf(error: unknown): OversizedAnswer | undefined {
  if (!(error instanceof ProtocolError) || error.code !== ProtocolErrorCode.InternalError) return undefined;
  const answer = (error.data as Record<string, Partial<OversizedAnswer>> | undefined)?.[DATA_KEY];
  if (typeof answer?.maxBytes !== 'number') return undefined;
  return typeof answer.bytes === 'number' ? { maxBytes: answer.maxBytes, bytes: answer.bytes } : { maxBytes: answer.maxBytes };
}
