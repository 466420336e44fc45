import { createHash } from 'crypto';
import { parse } from 'yaml';
import { StartupError } from '../../shared/startup-error';
import { readPrincipalBudgets } from '../budgets/budget-limits';
import { isPlainObject } from '../plain-object';
import { Grant } from './grant';
import { TOOL_PATTERN, toolMatcher } from './tool-pattern';

/** One token of the file: its name, the SHA-256 digest of its secret, and what it may do. */
export interface NamedToken {
  name: string;
  digest: Buffer;
  grant: Grant;
}

/** A tokens file that cannot be used; the message names the file and every problem in it. */
export class TokensFileError extends StartupError {
  constructor(
    path: string,
    readonly problems: string[],
  ) {
    super(`AUTH_TOKENS_FILE ${path} is invalid:\n${problems.map((problem) => `  - ${problem}`).join('\n')}`);
  }
}

const TOKEN_NAME = /^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$/;
const SHA256_HEX = /^[0-9a-fA-F]{64}$/;
const ENTRY_KEYS = new Set([
  'name',
  'token',
  'sha256',
  'protocols',
  'tools',
  'resources',
  'prompts',
  'llm',
  'rate_limits',
  'max_connections',
  'devices',
  'budgets',
]);
/** The characters a `devices` glob may hold: those of device ids, and `*`. */
const DEVICE_PATTERN = /^[A-Za-z0-9_:*-]{1,128}$/;
/** A `resources` URI or glob: 1-1024 characters, none of them whitespace or control characters. */
const RESOURCE_PATTERN = /^[^\s\p{Cc}]{1,1024}$/u;
/** Prompt names are the upstreams' own (`simple-prompt`) behind their prefix: any visible characters. */
const PROMPT_PATTERN = /^[^\s\p{Cc}]{1,256}$/u;
const RATE_LIMIT_KEYS = new Set(['turns_per_minute', 'tool_calls_per_minute']);

/** The SHA-256 digest of a token, as tokens are compared. */
export const tokenDigest = (token: string): Buffer => createHash('sha256').update(token, 'utf8').digest();

const isPositiveInteger = (value: unknown): value is number => Number.isInteger(value) && (value as number) > 0;

/** What a JWT's claims must hold for an `oidc` rule to apply; each key is one value or a list (any of them). */
export interface OidcMatch {
  /** The token has one of these scopes (`scope` or `scp`). */
  scope?: string[];
  /** `groups` holds one of these. */
  groups?: string[];
  /** `roles`, or Keycloak's `realm_access.roles`, holds one of these. */
  roles?: string[];
  sub?: string[];
  client_id?: string[];
  /** `iss` is one of these (one of `OIDC_ISSUERS`). */
  issuer?: string[];
}

/** One rule of the tokens file's `oidc` section: the first whose `match` holds decides a JWT's grant. */
export interface OidcRule {
  /** `oidc[<index>]`, or the rule's `name`: what refusals and logs call it. */
  name: string;
  match: OidcMatch;
  grant: Grant;
  /** The tool globs of the grant, to tell which scope a tool needs (step-up). */
  toolPatterns?: string[];
}

/** A tokens file: its named static tokens, and its rules for JWT access tokens. */
export interface TokensDocument {
  tokens: NamedToken[];
  oidc: OidcRule[];
}

/**
 * Reads a tokens file (YAML, which JSON is a subset of) into its named tokens. Every problem is
 * reported at once, each with where it is (`tokens[1] "kitchen": ...`), and unknown keys are
 * problems too: a misspelt `tool:` must not silently grant every tool. `protocols` lists what a
 * token's `protocols` may name; without it any names are taken (the protocols are not all known
 * when the file is first read, see `AccessTokenService`).
 */
export function parseTokensFile(text: string, path: string, protocols?: readonly string[]): NamedToken[] {
  return parseTokensDocument(text, path, protocols).tokens;
}

const DOCUMENT_KEYS = new Set(['tokens', 'oidc']);
const RULE_KEYS = new Set(['name', 'match', 'grant']);
const MATCH_KEYS = new Set(['scope', 'groups', 'roles', 'sub', 'client_id', 'issuer']);
const GRANT_KEYS = new Set(['protocols', 'tools', 'resources', 'prompts', 'llm', 'rate_limits', 'max_connections', 'devices', 'budgets']);

/** {@link parseTokensFile}, with the `oidc` rules (a file may hold only those). */
export function parseTokensDocument(text: string, path: string, protocols?: readonly string[]): TokensDocument {
  let document: unknown;
  try {
    document = parse(text);
  } catch (error) {
    throw new TokensFileError(path, [`not YAML or JSON: ${(error as Error).message.split('\n')[0]}`]);
  }
  if (!isPlainObject(document) || !(Array.isArray(document.tokens) || (document.tokens === undefined && Array.isArray(document.oidc)))) {
    throw new TokensFileError(path, ['it must hold a "tokens" list: tokens: [{name: kitchen, token: "..."}] (or an "oidc" list of rules)']);
  }
  const problems: string[] = [];
  for (const key of Object.keys(document)) {
    if (!DOCUMENT_KEYS.has(key)) problems.push(`unknown key "${key}" (known: ${[...DOCUMENT_KEYS].join(', ')})`);
  }
  const tokens: NamedToken[] = [];
  const names = new Set<string>();
  const digests = new Set<string>();
  ((document.tokens as unknown[] | undefined) ?? []).forEach((entry: unknown, index: number) => {
    const where = `tokens[${index}]${isPlainObject(entry) && typeof entry.name === 'string' ? ` "${entry.name}"` : ''}`;
    const entryProblems: string[] = [];
    const token = readEntry(entry, (problem) => entryProblems.push(`${where}: ${problem}`), protocols);
    problems.push(...entryProblems);
    if (!token || entryProblems.length > 0) return;
    if (names.has(token.name)) problems.push(`${where}: the name is used twice`);
    const hex = token.digest.toString('hex');
    if (digests.has(hex)) problems.push(`${where}: the same token as an earlier entry`);
    names.add(token.name);
    digests.add(hex);
    tokens.push(token);
  });
  const oidc: OidcRule[] = [];
  if (document.oidc !== undefined && !Array.isArray(document.oidc)) {
    problems.push('oidc must be a list of rules: oidc: [{match: {scope: tools:read}, grant: {tools: ["get_*"]}}]');
  }
  ((Array.isArray(document.oidc) ? document.oidc : []) as unknown[]).forEach((entry, index) => {
    const where = `oidc[${index}]${isPlainObject(entry) && typeof entry.name === 'string' ? ` "${entry.name}"` : ''}`;
    const ruleProblems: string[] = [];
    const rule = readRule(entry, index, (problem) => ruleProblems.push(`${where}: ${problem}`), protocols);
    problems.push(...ruleProblems);
    if (rule && ruleProblems.length === 0) oidc.push(rule);
  });
  if (problems.length > 0) throw new TokensFileError(path, problems);
  return { tokens, oidc };
}

function readRule(entry: unknown, index: number, problem: (message: string) => void, known?: readonly string[]): OidcRule | undefined {
  if (!isPlainObject(entry)) {
    problem('must be an object: {match: {...}, grant: {...}}');
    return undefined;
  }
  for (const key of Object.keys(entry)) {
    if (!RULE_KEYS.has(key)) problem(`unknown key "${key}" (known: ${[...RULE_KEYS].join(', ')})`);
  }
  const { name, match, grant } = entry;
  if (name !== undefined && (typeof name !== 'string' || !TOKEN_NAME.test(name))) {
    problem('name must be 1-64 letters, digits, "_", ".", "@" or "-", starting with a letter or digit');
  }
  const conditions: OidcMatch = {};
  if (!isPlainObject(match) || Object.keys(match).length === 0) problem(`match must be an object with at least one of ${[...MATCH_KEYS].join(', ')}`);
  else {
    for (const [key, value] of Object.entries(match)) {
      if (!MATCH_KEYS.has(key)) {
        problem(`match: unknown key "${key}" (known: ${[...MATCH_KEYS].join(', ')})`);
        continue;
      }
      const values = typeof value === 'string' ? [value] : value;
      if (!Array.isArray(values) || values.length === 0 || values.some((item) => typeof item !== 'string' || item === '' || item.length > 256)) {
        problem(`match.${key} must be a non-empty string or list of strings`);
        continue;
      }
      conditions[key as keyof OidcMatch] = values as string[];
    }
  }
  if (grant !== undefined && !isPlainObject(grant)) {
    problem(
      'grant must be an object: {tools: [...], resources: [...], prompts: [...], protocols: [...], llm, rate_limits, max_connections, devices: [...], budgets}',
    );
    return undefined;
  }
  const ruleName = typeof name === 'string' ? name : `oidc[${index}]`;
  const body = (grant as Record<string, unknown> | undefined) ?? {};
  for (const key of Object.keys(body)) {
    if (!GRANT_KEYS.has(key)) problem(`grant: unknown key "${key}" (known: ${[...GRANT_KEYS].join(', ')})`);
  }
  const read = readGrant(body, (message) => problem(`grant: ${message}`), ruleName, known);
  return { name: ruleName, match: conditions, grant: read, toolPatterns: Array.isArray(body.tools) ? (body.tools as string[]) : undefined };
}

function readEntry(entry: unknown, problem: (message: string) => void, known?: readonly string[]): NamedToken | undefined {
  if (!isPlainObject(entry)) {
    problem('must be an object with a name and a token (or sha256)');
    return undefined;
  }
  for (const key of Object.keys(entry)) {
    if (!ENTRY_KEYS.has(key)) problem(`unknown key "${key}" (known: ${[...ENTRY_KEYS].join(', ')})`);
  }
  const { name, token, sha256, protocols, tools, resources, prompts, llm, rate_limits: rateLimits, max_connections: maxConnections, devices, budgets } = entry;
  if (typeof name !== 'string' || !TOKEN_NAME.test(name)) {
    problem('name must be 1-64 letters, digits, "_", ".", "@" or "-", starting with a letter or digit');
  }
  let digest: Buffer | undefined;
  if ((token === undefined) === (sha256 === undefined)) problem('give exactly one of token and sha256');
  else if (token !== undefined) {
    if (typeof token !== 'string' || token.length < 8) problem('token must be a string of at least 8 characters');
    else digest = tokenDigest(token);
  } else if (typeof sha256 !== 'string' || !SHA256_HEX.test(sha256)) problem("sha256 must be the 64 hex digits of the token's SHA-256 digest");
  else digest = Buffer.from(sha256, 'hex');

  const grant = readGrant(
    { protocols, tools, resources, prompts, llm, rate_limits: rateLimits, max_connections: maxConnections, devices, budgets },
    problem,
    typeof name === 'string' ? name : '',
    known,
  );
  if (digest === undefined || typeof name !== 'string') return undefined;
  return { name, digest, grant };
}

/** The grant of a tokens-file entry or an `oidc` rule, checked as rigorously either way. */
function readGrant(entry: Record<string, unknown>, problem: (message: string) => void, name: string, known?: readonly string[]): Grant {
  const { protocols, tools, resources, prompts, llm, rate_limits: rateLimits, max_connections: maxConnections, devices } = entry;
  const budgets = readPrincipalBudgets(entry.budgets, problem);
  const isProtocol = (p: unknown) => (known ? known.includes(p as string) : typeof p === 'string' && p !== '');
  if (protocols !== undefined && (!Array.isArray(protocols) || !protocols.every(isProtocol))) {
    problem(`protocols must be a list of ${known ? known.join(', ') : 'protocol names'}`);
  }
  if (tools !== undefined && (!Array.isArray(tools) || tools.some((t) => typeof t !== 'string' || !TOOL_PATTERN.test(t)))) {
    problem('tools must be a list of tool names and globs ("get_*", "device.*": letters, digits, "_", "." and "*")');
  }
  if (resources !== undefined && !isPatternList(resources, RESOURCE_PATTERN)) {
    problem('resources must be a list of resource URIs and globs ("file:///srv/*": no spaces, at most 1024 characters)');
  }
  if (prompts !== undefined && !isPatternList(prompts, PROMPT_PATTERN)) {
    problem('prompts must be a list of prompt names and globs ("everything.*": no spaces, at most 256 characters)');
  }
  if (devices !== undefined && (!Array.isArray(devices) || devices.some((d) => typeof d !== 'string' || !DEVICE_PATTERN.test(d)))) {
    problem('devices must be a list of device ids and globs ("kitchen-*", "AA:BB:*": letters, digits, "_", "-", ":" and "*")');
  }
  if (llm !== undefined && typeof llm !== 'boolean') problem('llm must be true or false');
  if (maxConnections !== undefined && !isPositiveInteger(maxConnections)) problem('max_connections must be a positive integer');
  if (rateLimits !== undefined) {
    if (!isPlainObject(rateLimits)) problem('rate_limits must be an object: {turns_per_minute: 30, tool_calls_per_minute: 120}');
    else {
      for (const [key, value] of Object.entries(rateLimits)) {
        if (!RATE_LIMIT_KEYS.has(key)) problem(`rate_limits: unknown key "${key}" (known: ${[...RATE_LIMIT_KEYS].join(', ')})`);
        else if (!isPositiveInteger(value)) problem(`rate_limits.${key} must be a positive integer`);
      }
    }
  }
  const limits = isPlainObject(rateLimits) ? rateLimits : {};
  const validTools = Array.isArray(tools) && tools.every((t) => typeof t === 'string' && TOOL_PATTERN.test(t));
  const toolPatterns = validTools ? (tools as string[]) : undefined;
  const validDevices = Array.isArray(devices) && devices.every((d) => typeof d === 'string' && DEVICE_PATTERN.test(d));
  return Object.freeze({
    name,
    protocols: Array.isArray(protocols) ? new Set(protocols as string[]) : undefined,
    mayUseTool: toolPatterns ? toolMatcher(toolPatterns) : () => true,
    restrictsTools: toolPatterns !== undefined,
    mayReadResource: isPatternList(resources, RESOURCE_PATTERN) ? toolMatcher(resources) : () => true,
    mayUsePrompt: isPatternList(prompts, PROMPT_PATTERN) ? toolMatcher(prompts) : () => true,
    llm: llm !== false,
    turnsPerMinute: limits.turns_per_minute as number | undefined,
    toolCallsPerMinute: limits.tool_calls_per_minute as number | undefined,
    maxConnections: maxConnections as number | undefined,
    devices: validDevices ? toolMatcher(devices as string[]) : undefined,
    budgets,
  });
}

/** Whether `value` is a list of strings that each match `pattern`. */
function isPatternList(value: unknown, pattern: RegExp): value is string[] {
  return Array.isArray(value) && value.every((item) => typeof item === 'string' && pattern.test(item));
}
