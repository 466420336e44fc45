/** Longest a value in an audit line may be, in characters of its JSON text. */
export const AUDIT_VALUE_MAX_CHARS = 1024;

/**
 * A value as an audit line carries it: its JSON text, cut at {@link AUDIT_VALUE_MAX_CHARS} with
 * a note of how long it was, so one large argument or result cannot flood the log. A string
 * stays a string (not JSON-quoted twice); a value that cannot be serialised says so.
 */
export function clipForAudit(value: unknown, max = AUDIT_VALUE_MAX_CHARS): string {
  let text: string;
  try {
    text = typeof value === 'string' ? value : (JSON.stringify(value) ?? 'undefined');
  } catch {
    text = '[not serialisable]';
  }
  return text.length <= max ? text : `${text.slice(0, max)}… [${text.length} chars]`;
}
