import { ArgumentsHost, Catch, ExceptionFilter, Injectable, Logger } from '@nestjs/common';
import type { WebSocket } from 'ws';
import { describeException } from '../../core/errors/describe-exception';
import type { GatewayErrorCode } from '../../core/errors/gateway-error';
import { EnvelopeError, EnvelopeErrorCode } from './envelope';
import { McpSocketSessions } from './mcp-socket-sessions.service';

const logger = new Logger('MCP');

/** The envelope code of the few gateway errors an MCP handler can meet (the auth guard's, mostly). */
const ENVELOPE_CODE: Partial<Record<GatewayErrorCode, EnvelopeErrorCode>> = {
  UNAUTHORIZED: EnvelopeErrorCode.UNAUTHORIZED,
  FORBIDDEN: EnvelopeErrorCode.FORBIDDEN,
  INVALID_MESSAGE: EnvelopeErrorCode.INVALID_REQUEST,
  PAYLOAD_TOO_LARGE: EnvelopeErrorCode.BAD_MESSAGE,
};

/**
 * Any failure on an MCP socket, told in the session's vocabulary: an `error` envelope (which
 * also closes the connection for 401), or a JSON-RPC error on a plain connection. Anything
 * unexpected is logged and reported as -32603 without detail.
 */
@Catch()
@Injectable()
export class McpWsExceptionFilter implements ExceptionFilter {
  constructor(private readonly sessions: McpSocketSessions) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    this.sessions.reportError(host.switchToWs().getClient<WebSocket>(), toEnvelopeError(exception));
  }
}

function toEnvelopeError(exception: unknown): EnvelopeError {
  if (exception instanceof EnvelopeError) return exception;
  const { code, message } = describeException(exception, logger);
  const envelopeCode = ENVELOPE_CODE[code];
  return envelopeCode ? new EnvelopeError(envelopeCode, message) : new EnvelopeError(EnvelopeErrorCode.INTERNAL_ERROR, 'Internal error');
}
