import { ProtocolError, SdkError, SdkErrorCode, SdkHttpError, SseError } from '@modelcontextprotocol/client';
import { ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import { STATUS_CODES } from 'http';
import { withoutMcpErrorPrefix } from '../core/errors/mcp-error-words';
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
 * status only, never by its body; a network error by its code (`ECONNREFUSED`); a failed
 * version negotiation by what made it fail.
 */
export function describeUpstreamError(error: unknown): string {
  if (error instanceof SdkHttpError || error instanceof SseError) {
    const status = error instanceof SdkHttpError ? error.status : error.code;
    if (typeof status === 'number' && STATUS_CODES[status]) return `HTTP ${status} ${STATUS_CODES[status]}`;
    return error instanceof SseError ? 'the SSE stream failed' : 'unexpected HTTP response';
  }
  if (error instanceof SdkError && error.code === SdkErrorCode.EraNegotiationFailed && error.cause !== undefined) return describeUpstreamError(error.cause);
  // Duck-typed: fetch's errors come from Node's own realm, where `instanceof Error` may not hold.
  const { message, cause } = (error ?? {}) as { message?: unknown; cause?: { code?: unknown } };
  if (typeof message !== 'string') return String(error);
  return typeof cause?.code === 'string' ? `${message} (${cause.code})` : message;
}

/** An upstream's answer to one request that failed it, in the words and code MCP callers read. */
export interface UpstreamRefusal {
  code: number;
  message: string;
  data?: unknown;
}

/** SDK errors that fail one request and leave the connection as it was. */
const REQUEST_FAILURES: ReadonlyMap<SdkErrorCode, number> = new Map([
  [SdkErrorCode.RequestTimeout, ErrorCode.RequestTimeout],
  [SdkErrorCode.InvalidResult, ErrorCode.InternalError],
  [SdkErrorCode.UnsupportedResultType, ErrorCode.InternalError],
  [SdkErrorCode.InputRequiredRoundsExceeded, ErrorCode.InternalError],
  [SdkErrorCode.ListPaginationExceeded, ErrorCode.InternalError],
  [SdkErrorCode.MethodNotSupportedByProtocolVersion, ErrorCode.MethodNotFound],
  [SdkErrorCode.CapabilityNotSupported, ErrorCode.MethodNotFound],
]);

/**
 * What a failed request says when it was answered, by the upstream (an error answer) or by the
 * SDK on its behalf (no answer in time, an answer that is no valid result); `undefined` when
 * the request could not reach the upstream, which means the connection is gone. The message is
 * the upstream's own, without the prefix an SDK 1.x server puts before it.
 */
export function refusalOf(error: unknown): UpstreamRefusal | undefined {
  if (error instanceof ProtocolError) return { code: error.code, message: withoutMcpErrorPrefix(error.message), data: error.data };
  const code = error instanceof SdkError ? REQUEST_FAILURES.get(error.code) : undefined;
  return code === undefined ? undefined : { code, message: (error as SdkError).message };
}

/** Whether a request failed because the connection closed while it waited. */
export function isConnectionClosed(error: unknown): boolean {
  return error instanceof SdkError && error.code === SdkErrorCode.ConnectionClosed;
}
