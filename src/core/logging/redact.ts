/** `scheme://user:password@` (or `scheme://:password@`) in a URL. */
const URL_CREDENTIALS = /\/\/[^/\s:@]*:[^/\s@]+@/g;

/**
 * `text` with the credentials of every URL in it (`http://user:password@host/`) replaced by
 * `***`: configured URLs are shown in errors, logs and `/health`, their passwords never.
 */
export function redactUrlCredentials(text: string): string {
  return text.replace(URL_CREDENTIALS, '//***@');
}

/** Query parameters whose values are secrets wherever they appear in a URL. */
const SECRET_PARAMETER = /key|token|secret|password|passwd|auth|signature/i;

/**
 * A URL fit for a log: user name and password replaced by `***`, and so are the values of
 * query parameters named like secrets. What does not parse as a URL gets {@link redactUrlCredentials}.
 */
export function redactUrl(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return redactUrlCredentials(text);
  }
  if (url.username) url.username = '***';
  if (url.password) url.password = '***';
  for (const name of [...url.searchParams.keys()]) {
    if (SECRET_PARAMETER.test(name)) url.searchParams.set(name, '***');
  }
  return url.toString();
}

/** `value` with `redact` applied to every string in it, however deep; the rest is copied as is. */
export function redactStrings<T>(value: T, redact: (text: string) => string): T {
  if (typeof value === 'string') return redact(value) as T;
  if (Array.isArray(value)) return value.map((item) => redactStrings(item, redact)) as T;
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, redactStrings(item, redact)])) as T;
}
