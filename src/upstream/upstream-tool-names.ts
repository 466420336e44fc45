import { createHash } from 'crypto';
import { toolNameProblem } from '../core/tools/tool-name';

/**
 * How an upstream's tool names become catalogue names. MCP allows names our rule does not
 * (`get-sum`, `files/read`, `9lives`), so a name is made valid rather than refused:
 *
 * 1. the prefix goes first (`<server>.` by default);
 * 2. every character other than a letter, digit, `_` or `.` becomes `_`; a run of dots becomes
 *    one dot, and trailing dots go; a name that would start with a digit gets a leading `_`;
 * 3. a name still longer than 64 characters, or that another tool of the same server also
 *    became, is cut and ends with `_` and 6 hex digits of a hash of the upstream name, so it
 *    stays unique and is the same on every connection.
 *
 * The upstream name is kept beside the catalogue name and is what a call sends, so the mapping
 * never has to be undone by parsing.
 */

const MAX_NAME = 64;
const HASH_DIGITS = 6;

function sanitize(name: string): string {
  const cleaned = name
    .replace(/[^A-Za-z0-9_.]/g, '_')
    .replace(/\.{2,}/g, '.')
    .replace(/\.+$/, '');
  return /^[A-Za-z_]/.test(cleaned) ? cleaned : `_${cleaned}`;
}

function hashed(sanitized: string, upstreamName: string): string {
  const digest = createHash('sha256').update(upstreamName).digest('hex').slice(0, HASH_DIGITS);
  return `${sanitized.slice(0, MAX_NAME - HASH_DIGITS - 1)}_${digest}`;
}

/** The prefix a server's tools get when its entry names none: its name made valid, then a dot. */
export function defaultPrefix(serverName: string): string {
  return `${sanitize(serverName)}.`;
}

/** Why `prefix` cannot start tool names, or `undefined` when it can (`""` can). */
export function prefixProblem(prefix: string): string | undefined {
  if (prefix === '') return undefined;
  return (
    toolNameProblem(`${prefix}x`) && `prefix ${JSON.stringify(prefix)} must start with a letter or "_" and contain only letters, digits, "_" and single dots`
  );
}

/** Catalogue name of each upstream tool name, in the rule above. */
export function catalogueNames(prefix: string, upstreamNames: readonly string[]): Map<string, string> {
  const plain = new Map(upstreamNames.map((name) => [name, sanitize(`${prefix}${name}`)]));
  const uses = new Map<string, number>();
  for (const name of plain.values()) uses.set(name, (uses.get(name) ?? 0) + 1);
  const names = new Map<string, string>();
  for (const [upstream, candidate] of plain) {
    const unchanged = candidate === `${prefix}${upstream}`;
    const clash = uses.get(candidate)! > 1 && !unchanged;
    names.set(upstream, candidate.length > MAX_NAME || clash ? hashed(candidate, upstream) : candidate);
  }
  return names;
}
