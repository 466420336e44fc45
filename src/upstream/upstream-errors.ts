import { SseError } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { STATUS_CODES } from 'http';
import { redactUrlCredentials } from '../core/logging/redact';
import type { UpstreamServerConfig } from './upstream-servers.config';

/** Secrets shorter than this are not searched for: they would match ordinary words. */
const MIN_SECRET_LENGTH = 6;
const MAX_MESSAGE_LENGTH = 300;

/**
 * The values of a server's entry that may be secret: header and env values (and each word of
 * them, for `Bearer <token>`), the URL's password and query values, and the OAuth client secret.
 */
function secretsOf(server: UpstreamServerConfig): string[] {
  const values =
    server.transport === 'stdio'
      ? Object.values(server.env)
      : [...Object.values(server.headers), server.url.password, ...server.url.searchParams.values(), ...(server.oauth ? [server.oauth.clientSecret] : [])];
  const words = values.flatMap((value) => [value, ...value.split(/\s+/)]);
  return [...new Set(words.filter((word) => word.length >= MIN_SECRET_LENGTH))].sort((a, b) => b.length - a.length);
}

/**
 * A function that removes the server's secrets (and any `user:password@` in a URL) from a text
 * before it goes to a log, `/health` or a caller: upstream errors and results are the
 * upstream's words, which may repeat what it was sent (a misconfigured or hostile server can
 * echo its token back).
 */
export function redactorFor(server: UpstreamServerConfig): (text: string) => string {
  const secrets = secretsOf(server);
  return (text) => {
    let clean = redactUrlCredentials(text);
    for (const secret of secrets) clean = clean.split(secret).join('***');
    return clean;
  };
}

/** A text cut to a length that fits a log line or a `/health` field. */
export function brief(text: string): string {
  return text.length > MAX_MESSAGE_LENGTH ? `${text.slice(0, MAX_MESSAGE_LENGTH - 1)}…` : text;
}

/**
 * A short description of why talking to an upstream failed. An HTTP refusal is told by its
 * status only, never by its body; a network error by its code (`ECONNREFUSED`).
 */
export function describeUpstreamError(error: unknown): string {
  if (error instanceof StreamableHTTPError || error instanceof SseError) {
    const status = error.code;
    if (typeof status === 'number' && STATUS_CODES[status]) return `HTTP ${status} ${STATUS_CODES[status]}`;
    return error instanceof SseError ? 'the SSE stream failed' : 'unexpected HTTP response';
  }
  // Duck-typed: fetch's errors come from Node's own realm, where `instanceof Error` may not hold.
  const { message, cause } = (error ?? {}) as { message?: unknown; cause?: { code?: unknown } };
  if (typeof message !== 'string') return String(error);
  return typeof cause?.code === 'string' ? `${message} (${cause.code})` : message;
}
