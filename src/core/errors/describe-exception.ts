import { HttpException, HttpStatus, Logger } from '@nestjs/common';
import { WsException } from '@nestjs/websockets';
import { GatewayError, GatewayErrorCode } from './gateway-error';

/** The HTTP status each internal code corresponds to (the LLM spec's "HTTP equivalent" column). */
const HTTP_STATUS: Partial<Record<GatewayErrorCode, number>> = {
  INVALID_MESSAGE: 400,
  UNKNOWN_MESSAGE_TYPE: 400,
  INVALID_TOOL_PARAMETERS: 400,
  TOOL_REGISTRATION_FAILED: 400,
  UNSUPPORTED_VERSION: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  TOOL_NOT_FOUND: 404,
  NOT_FOUND: 404,
  PAYLOAD_TOO_LARGE: 413,
  RATE_LIMITED: 429,
  DEVICE_OFFLINE: 404,
  DEVICE_BUSY: 429,
  DEVICE_ID_TAKEN: 409,
  BUDGET_EXCEEDED: 429,
  TOOL_UNAVAILABLE: 503,
  TIMEOUT: 504,
  TOOL_TIMEOUT: 504,
  TOOL_RESULT_TIMEOUT: 504,
};

export function httpStatusOf(code: GatewayErrorCode): number {
  return HTTP_STATUS[code] ?? 500;
}

const CODE_OF_STATUS: Record<number, GatewayErrorCode> = {
  400: GatewayErrorCode.INVALID_MESSAGE,
  401: GatewayErrorCode.UNAUTHORIZED,
  403: GatewayErrorCode.FORBIDDEN,
  404: GatewayErrorCode.NOT_FOUND,
  413: GatewayErrorCode.PAYLOAD_TOO_LARGE,
};

export interface DescribedError {
  code: GatewayErrorCode;
  message: string;
  status: number;
  /** A {@link GatewayError}'s `fields`: said beside the code and message. */
  fields?: Readonly<Record<string, string>>;
}

function messageOf(exception: HttpException): string {
  const body = exception.getResponse();
  const message = typeof body === 'object' && body !== null ? (body as { message?: unknown }).message : body;
  return Array.isArray(message) ? message.join('; ') : String(message ?? exception.message);
}

/**
 * Any exception a protocol handler let through, as a code, a client-safe message and an HTTP
 * status. Only {@link GatewayError}s and Nest's HTTP/WS exceptions keep their message; anything
 * else is logged in full and reported as an internal error, so no stack trace or upstream
 * detail reaches a client.
 */
export function describeException(exception: unknown, logger: Logger): DescribedError {
  if (exception instanceof GatewayError) {
    return { code: exception.code, message: exception.message, status: httpStatusOf(exception.code), ...(exception.fields && { fields: exception.fields }) };
  }
  if (exception instanceof HttpException) {
    const status = exception.getStatus();
    if (status < 500) {
      return { code: CODE_OF_STATUS[status] ?? GatewayErrorCode.INVALID_MESSAGE, message: messageOf(exception), status };
    }
  }
  if (exception instanceof WsException) {
    return { code: GatewayErrorCode.FORBIDDEN, message: String(exception.message), status: HttpStatus.FORBIDDEN };
  }
  const parserError = bodyParserError(exception);
  if (parserError) return parserError;
  logger.error((exception as Error)?.stack ?? String(exception));
  return { code: GatewayErrorCode.INTERNAL_ERROR, message: 'Internal error', status: 500 };
}

/** body-parser's own errors that Nest does not map itself (it maps unparseable JSON to a 400). */
function bodyParserError(exception: unknown): DescribedError | undefined {
  const error = exception as { type?: unknown; status?: unknown; message?: unknown; length?: unknown; limit?: unknown };
  if (error?.type === 'entity.too.large') {
    return {
      code: GatewayErrorCode.PAYLOAD_TOO_LARGE,
      message: `Request body of ${error.length} bytes is over the ${error.limit}-byte limit`,
      status: 413,
    };
  }
  if (typeof error?.type === 'string' && typeof error.status === 'number' && error.status < 500) {
    return { code: CODE_OF_STATUS[error.status] ?? GatewayErrorCode.INVALID_MESSAGE, message: String(error.message), status: error.status };
  }
  return undefined;
}
