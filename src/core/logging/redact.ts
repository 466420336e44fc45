/** `scheme://user:password@` in a URL. */
const URL_CREDENTIALS = /\/\/[^/\s:@]+:[^/\s@]+@/g;

/**
 * `text` with the credentials of every URL in it (`http://user:password@host/`) replaced by
 * `***`: configured URLs are shown in errors, logs and `/health`, their passwords never.
 */
export function redactUrlCredentials(text: string): string {
  return text.replace(URL_CREDENTIALS, '//***@');
}

/** `value` with `redact` applied to every string in it, however deep; the rest is copied as is. */
export function redactStrings<T>(value: T, redact: (text: string) => string): T {
  if (typeof value === 'string') return redact(value) as T;
  if (Array.isArray(value)) return value.map((item) => redactStrings(item, redact)) as T;
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, redactStrings(item, redact)])) as T;
}
