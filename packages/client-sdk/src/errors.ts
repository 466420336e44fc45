import type { ErrorFrame, GatewayErrorCode } from './protocol/index.js';

/** Failures the client itself detects; the gateway never sends these codes. */
export type ClientErrorCode =
  /** `connect()` could not open the socket, or no `status connected` came in time. */
  | 'CONNECT_FAILED'
  /** A request was made before `connect()` or after `close()`. */
  | 'NOT_CONNECTED'
  /** The socket dropped while the request was on its way; whether the gateway ran it is unknown. */
  | 'CONNECTION_LOST'
  /** Reconnection gave up after `reconnect.maxAttempts` attempts. */
  | 'RECONNECT_FAILED'
  /** `close()` was called while the request was pending. */
  | 'CLIENT_CLOSED'
  /** No `pong` within the time `ping()` was given. */
  | 'PING_TIMEOUT'
  /** A turn ended (`status: idle`) with neither an answer nor an error. */
  | 'NO_ANSWER'
  /** The turn was cancelled (`cancel()`, or a barge-in) before it answered. */
  | 'TURN_CANCELLED';

/**
 * Why a request failed: an `error` frame of the gateway (`frame` is set, `code` is the
 * gateway's) or a condition the client saw itself ({@link ClientErrorCode}).
 */
export class LlmGatewayError extends Error {
  override readonly name = 'LlmGatewayError';

  constructor(
    readonly code: GatewayErrorCode | ClientErrorCode,
    message: string,
    /** What the gateway added: a string, `{retry_after_s}` for RATE_LIMITED, `{meter, period, scope, limit, resets_at}` for BUDGET_EXCEEDED. */
    readonly details?: ErrorFrame['details'],
    /** The gateway's `error` frame, when the gateway reported the failure. */
    readonly frame?: ErrorFrame,
  ) {
    super(`${code}: ${message}`);
  }

  static fromFrame(frame: ErrorFrame): LlmGatewayError {
    return new LlmGatewayError(frame.code, frame.message, frame.details, frame);
  }
}
