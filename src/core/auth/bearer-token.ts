import type { IncomingMessage } from 'http';
import { queryParameter } from '../http/query-parameter';

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
  return queryParameter(request.url, 'token') || undefined;
}

/**
 * Whether a request offers a credential at all, usable or not (an `Authorization` header of any
 * scheme, an empty `?token=`), as opposed to none: guards that let a client authenticate after
 * connecting still refuse a credential that is offered and wrong.
 */
export function offersCredential(request: Pick<IncomingMessage, 'headers' | 'url'>): boolean {
  const { authorization, authentication } = request.headers;
  return authorization !== undefined || authentication !== undefined || queryParameter(request.url, 'token') !== null;
}
