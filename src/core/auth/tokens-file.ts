import { createHash } from 'crypto';
import { parse } from 'yaml';
import { StartupError } from '../errors/startup-error';
import { GRANTABLE_PROTOCOLS, Grant } from './grant';
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
const ENTRY_KEYS = new Set(['name', 'token', 'sha256', 'protocols', 'tools', 'llm', 'rate_limits', 'max_connections', 'devices']);
/** The characters a `devices` glob may hold: those of device ids, and `*`. */
const DEVICE_PATTERN = /^[A-Za-z0-9_:*-]{1,128}$/;
const RATE_LIMIT_KEYS = new Set(['turns_per_minute', 'tool_calls_per_minute']);

/** The SHA-256 digest of a token, as tokens are compared. */
export const tokenDigest = (token: string): Buffer => createHash('sha256').update(token, 'utf8').digest();

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);
const isPositiveInteger = (value: unknown): value is number => Number.isInteger(value) && (value as number) > 0;

/**
 * Reads a tokens file (YAML, which JSON is a subset of) into its named tokens. Every problem is
 * reported at once, each with where it is (`tokens[1] "kitchen": ...`), and unknown keys are
 * problems too: a misspelt `tool:` must not silently grant every tool.
 */
export function parseTokensFile(text: string, path: string): NamedToken[] {
  let document: unknown;
  try {
    document = parse(text);
  } catch (error) {
    throw new TokensFileError(path, [`not YAML or JSON: ${(error as Error).message.split('\n')[0]}`]);
  }
  if (!isObject(document) || !Array.isArray(document.tokens)) {
    throw new TokensFileError(path, ['it must hold a "tokens" list: tokens: [{name: kitchen, token: "..."}]']);
  }
  const problems: string[] = [];
  const tokens: NamedToken[] = [];
  const names = new Set<string>();
  const digests = new Set<string>();
  document.tokens.forEach((entry: unknown, index: number) => {
    const where = `tokens[${index}]${isObject(entry) && typeof entry.name === 'string' ? ` "${entry.name}"` : ''}`;
    const entryProblems: string[] = [];
    const token = readEntry(entry, (problem) => entryProblems.push(`${where}: ${problem}`));
    problems.push(...entryProblems);
    if (!token || entryProblems.length > 0) return;
    if (names.has(token.name)) problems.push(`${where}: the name is used twice`);
    const hex = token.digest.toString('hex');
    if (digests.has(hex)) problems.push(`${where}: the same token as an earlier entry`);
    names.add(token.name);
    digests.add(hex);
    tokens.push(token);
  });
  if (problems.length > 0) throw new TokensFileError(path, problems);
  return tokens;
}

function readEntry(entry: unknown, problem: (message: string) => void): NamedToken | undefined {
  if (!isObject(entry)) {
    problem('must be an object with a name and a token (or sha256)');
    return undefined;
  }
  for (const key of Object.keys(entry)) {
    if (!ENTRY_KEYS.has(key)) problem(`unknown key "${key}" (known: ${[...ENTRY_KEYS].join(', ')})`);
  }
  const { name, token, sha256, protocols, tools, llm, rate_limits: rateLimits, max_connections: maxConnections, devices } = entry;
  if (typeof name !== 'string' || !TOKEN_NAME.test(name)) {
    problem('name must be 1-64 letters, digits, "_", ".", "@" or "-", starting with a letter or digit');
  }
  let digest: Buffer | undefined;
  if ((token === undefined) === (sha256 === undefined)) problem('give exactly one of token and sha256');
  else if (token !== undefined) {
    if (typeof token !== 'string' || token.length < 8) problem('token must be a string of at least 8 characters');
    else digest = tokenDigest(token);
  } else if (typeof sha256 !== 'string' || !SHA256_HEX.test(sha256)) problem('sha256 must be the 64 hex digits of the token\'s SHA-256 digest');
  else digest = Buffer.from(sha256, 'hex');

  if (protocols !== undefined && (!Array.isArray(protocols) || protocols.some((p) => !(GRANTABLE_PROTOCOLS as readonly unknown[]).includes(p)))) {
    problem(`protocols must be a list of ${GRANTABLE_PROTOCOLS.join(', ')}`);
  }
  if (tools !== undefined && (!Array.isArray(tools) || tools.some((t) => typeof t !== 'string' || !TOOL_PATTERN.test(t)))) {
    problem('tools must be a list of tool names and globs ("get_*", "device.*": letters, digits, "_", "." and "*")');
  }
  if (devices !== undefined && (!Array.isArray(devices) || devices.some((d) => typeof d !== 'string' || !DEVICE_PATTERN.test(d)))) {
    problem('devices must be a list of device ids and globs ("kitchen-*", "AA:BB:*": letters, digits, "_", "-", ":" and "*")');
  }
  if (llm !== undefined && typeof llm !== 'boolean') problem('llm must be true or false');
  if (maxConnections !== undefined && !isPositiveInteger(maxConnections)) problem('max_connections must be a positive integer');
  if (rateLimits !== undefined) {
    if (!isObject(rateLimits)) problem('rate_limits must be an object: {turns_per_minute: 30, tool_calls_per_minute: 120}');
    else {
      for (const [key, value] of Object.entries(rateLimits)) {
        if (!RATE_LIMIT_KEYS.has(key)) problem(`rate_limits: unknown key "${key}" (known: ${[...RATE_LIMIT_KEYS].join(', ')})`);
        else if (!isPositiveInteger(value)) problem(`rate_limits.${key} must be a positive integer`);
      }
    }
  }
  if (digest === undefined || typeof name !== 'string') return undefined;
  const limits = isObject(rateLimits) ? rateLimits : {};
  const toolPatterns = Array.isArray(tools) ? (tools as string[]) : undefined;
  const grant: Grant = Object.freeze({
    name,
    protocols: Array.isArray(protocols) ? new Set(protocols as string[]) : undefined,
    mayUseTool: toolPatterns ? toolMatcher(toolPatterns) : () => true,
    restrictsTools: toolPatterns !== undefined,
    llm: llm !== false,
    turnsPerMinute: limits.turns_per_minute as number | undefined,
    toolCallsPerMinute: limits.tool_calls_per_minute as number | undefined,
    maxConnections: maxConnections as number | undefined,
    devices: Array.isArray(devices) ? toolMatcher(devices as string[]) : undefined,
  });
  return { name, digest, grant };
}
