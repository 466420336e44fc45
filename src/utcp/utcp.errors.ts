import { Logger } from '@nestjs/common';
import { describeException } from '../core/errors/describe-exception';
import { RateLimitedError } from '../core/limits/rate-limited.error';
import type { GatewayConnection } from '../core/ws/connection';
import { FrameRejection } from '../core/ws/frame-rejection';
import { errorFrame, requestIdOf, toolErrorFrame, UtcpError } from './utcp.frames';

/** RFC 6455 "policy violation": the close code after a refused `auth` frame. */
const CLOSE_POLICY_VIOLATION = 1008;

const logger = new Logger('UTCP');

function utcpErrorOf(error: unknown): UtcpError {
  if (error instanceof FrameRejection && error.reason === 'unauthenticated') {
    return { code: error.code, message: 'Not authenticated: send {"type":"auth","token":"<token>"} first' };
  }
  if (error instanceof RateLimitedError) return { code: error.code, message: error.message, details: error.wait };
  const { code, message } = describeException(error, logger);
  return { code, message };
}

/**
 * A client whose `auth` frame was refused has nothing left to do on its connection: after the
 * error, it is closed (1008). Every other failure leaves the connection open.
 */
function closeAfterFailedAuth(frame: unknown, connection: GatewayConnection): void {
  if ((frame as { type?: unknown } | null)?.type === 'auth') connection.close(CLOSE_POLICY_VIOLATION, 'Authentication failed');
}

/** Answers any failure on `/utcp` with an `error` frame echoing the request's id. */
export function answerUtcpFailure(error: unknown, frame: unknown, connection: GatewayConnection): void {
  connection.send(errorFrame(requestIdOf(frame), utcpErrorOf(error)));
  closeAfterFailedAuth(frame, connection);
}

/** Answers any failure on `/utcp/<tool>` with a `tool_error` frame. */
export function answerUtcpToolFailure(error: unknown, frame: unknown, connection: GatewayConnection): void {
  connection.send(toolErrorFrame(utcpErrorOf(error)));
  closeAfterFailedAuth(frame, connection);
}
