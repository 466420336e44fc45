import type { IncomingMessage } from 'http';

const BEARER = /^Bearer\s+(.+)$/i;

/**
 * The bearer token a request carries: `Authorization: Bearer <t>`, the LiteMCP spec's misspelt
 * `Authentication: Bearer <t>`, or a `?token=<t>` query parameter (what UTCP and browser
 * WebSocket clients, which cannot set headers, use).
 */
export function readBearerToken(request: Pick<IncomingMessage, 'headers' | 'url'>): string | undefined {
  for (const header of ['authorization', 'authentication'] as const) {
    const value = request.headers[header];
    const match = typeof value === 'string' ? BEARER.exec(value.trim()) : null;
    if (match) return match[1].trim();
  }
  const query = request.url?.indexOf('?') ?? -1;
  if (query >= 0) {
    const token = new URLSearchParams(request.url!.slice(query + 1)).get('token');
    if (token) return token;
  }
  return undefined;
}
