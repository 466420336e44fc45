/**
 * One query parameter of a raw request URL (`/utcp?token=a%20b` -> `a b`), `null` when absent.
 * For code that sees the bare `IncomingMessage` (WebSocket upgrades), where no framework has
 * parsed the query.
 */
export function queryParameter(url: string | undefined, name: string): string | null {
  const query = url?.indexOf('?') ?? -1;
  return query >= 0 ? new URLSearchParams(url!.slice(query + 1)).get(name) : null;
}
