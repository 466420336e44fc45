import { Logger } from '@nestjs/common';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { TooManyCallsError } from '../core/limits/calls-in-flight';
import { RateLimitedError } from '../core/limits/rate-limited.error';
import { describeException } from '../core/errors/describe-exception';
import type { GatewayErrorCode } from '../core/errors/gateway-error';
import { FrameRejection } from '../core/ws/frame-rejection';
import type { DescribedError } from '../core/errors/describe-exception';
import { CLIENT_ENVELOPE_TYPES, EnvelopeError, EnvelopeErrorCode } from './mcp.frames';

const logger = new Logger('MCP');

/** A JSON-RPC 2.0 error response; `id` is null when the request's id could not be read. */
export interface JsonRpcErrorResponse {
  jsonrpc: '2.0';
  id: string | number | null;
  error: { code: number; message: string; data?: unknown };
}

export function jsonRpcError(id: string | number | null, code: number, message: string, data?: unknown): JsonRpcErrorResponse {
  return { jsonrpc: '2.0', id, error: data === undefined ? { code, message } : { code, message, data } };
}

/** Whether `id` is a number `JSON.parse` may have changed: past 2^53 it rounds, past a double's range it is Infinity. */
const unrepresentable = (id: unknown): boolean => typeof id === 'number' && !(Math.abs(id) <= Number.MAX_SAFE_INTEGER);

/** The id of a (possibly invalid) JSON-RPC request, to echo in its error response; null for an id that cannot be read exactly. */
export function requestIdOf(value: unknown): string | number | null {
  const id = (value as { id?: unknown } | null)?.id;
  return typeof id === 'string' || (typeof id === 'number' && !unrepresentable(id)) ? id : null;
}

/**
 * Why a message (or any message of a batch) is refused for its id: a number that cannot be read
 * exactly, so no answer could name the request. `undefined` when its ids are fine.
 */
export function unrepresentableIdProblem(value: unknown): string | undefined {
  const messages = Array.isArray(value) ? value : [value];
  if (!messages.some((message) => unrepresentable((message as { id?: unknown } | null)?.id))) return undefined;
  return 'not answerable: its id is a number past 2^53 - 1, which cannot be read exactly (send a string or a smaller integer)';
}

/**
 * The JSON-RPC error of a call over its token's rate limit (a server error code, -32029 for
 * HTTP's 429); `data.retry_after_s` is the wait.
 */
export const RATE_LIMITED_ERROR = -32029;

/** A rate limit or a full connection as MCP says it: a JSON-RPC error, with the wait in `data` when there is one; anything else as it was. */
export function limitAsMcpError(error: unknown): unknown {
  if (error instanceof RateLimitedError) return new McpError(RATE_LIMITED_ERROR, error.message, error.wait);
  return error instanceof TooManyCallsError ? new McpError(RATE_LIMITED_ERROR, error.message) : error;
}

/** JSON-RPC's implementation-defined server error, which the SDK's HTTP transport uses for HTTP-level refusals. */
export const SERVER_ERROR = -32000;

/** The envelope code of the gateway errors an MCP frame can meet. */
const ENVELOPE_CODE: Partial<Record<GatewayErrorCode, EnvelopeErrorCode>> = {
  UNAUTHORIZED: EnvelopeErrorCode.UNAUTHORIZED,
  FORBIDDEN: EnvelopeErrorCode.FORBIDDEN,
  INVALID_MESSAGE: EnvelopeErrorCode.INVALID_REQUEST,
  PAYLOAD_TOO_LARGE: EnvelopeErrorCode.BAD_MESSAGE,
};

/** A frame the dispatcher refused, in the envelope protocol's words (section 4). */
function envelopeRejection(rejection: FrameRejection): EnvelopeError {
  switch (rejection.reason) {
    case 'malformed':
      return new EnvelopeError(EnvelopeErrorCode.PARSE_ERROR, 'Parse error', rejection.message);
    case 'untyped':
      return new EnvelopeError(EnvelopeErrorCode.INVALID_REQUEST, 'Invalid Request', 'an envelope is a JSON object with a string "type"');
    case 'unknown-type':
      return new EnvelopeError(
        EnvelopeErrorCode.INVALID_REQUEST,
        'Invalid Request',
        `unknown envelope type ${JSON.stringify(rejection.frameType)}: a client sends ${CLIENT_ENVELOPE_TYPES.join(', ')}`,
      );
    case 'invalid':
      return new EnvelopeError(EnvelopeErrorCode.INVALID_REQUEST, 'Invalid Request', rejection.message);
    default:
      return new EnvelopeError(ENVELOPE_CODE[rejection.code] ?? EnvelopeErrorCode.BAD_MESSAGE, rejection.message);
  }
}

/**
 * Any failure on an MCP WebSocket as an {@link EnvelopeError}, which each session tells its
 * client in its own vocabulary (an `error` envelope, or a JSON-RPC error on a plain
 * connection). Anything unexpected is logged and reported as -32603 without detail.
 */
export function toEnvelopeError(error: unknown): EnvelopeError {
  if (error instanceof EnvelopeError) return error;
  if (error instanceof FrameRejection) return envelopeRejection(error);
  const { code, message } = describeException(error, logger);
  const envelopeCode = ENVELOPE_CODE[code];
  return envelopeCode ? new EnvelopeError(envelopeCode, message) : new EnvelopeError(EnvelopeErrorCode.INTERNAL_ERROR, 'Internal error');
}

/**
 * A failure on `/mcp` before the SDK's transport saw the request, as the JSON-RPC error body MCP
 * clients read: a body that is not JSON (the only 400 that reaches the filter there) is -32700,
 * a body over the size limit -32600, anything else (auth, MCP turned off) -32000 with its message.
 */
export function mcpHttpErrorBody({ status, message }: DescribedError): JsonRpcErrorResponse {
  if (status === 400) return jsonRpcError(null, ErrorCode.ParseError, `Parse error: ${message}`);
  if (status === 413) return jsonRpcError(null, ErrorCode.InvalidRequest, `Invalid Request: ${message}`);
  return jsonRpcError(null, SERVER_ERROR, message);
}
