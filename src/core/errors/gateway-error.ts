/**
 * The one internal error vocabulary. It reuses the LLM gateway spec's codes (spec 5.4) and adds
 * the few that other protocols need to tell apart; each protocol maps a code to its own wire
 * form (an `error` frame, a JSON-RPC error, an HTTP status, a LiteMCP `error: true` result).
 */
export const GatewayErrorCode = {
  INVALID_MESSAGE: 'INVALID_MESSAGE',
  UNKNOWN_MESSAGE_TYPE: 'UNKNOWN_MESSAGE_TYPE',
  LLM_ERROR: 'LLM_ERROR',
  SESSION_ERROR: 'SESSION_ERROR',
  TIMEOUT: 'TIMEOUT',
  INTERNAL_ERROR: 'INTERNAL_ERROR',
  TOOL_NOT_FOUND: 'TOOL_NOT_FOUND',
  TOOL_EXECUTION_FAILED: 'TOOL_EXECUTION_FAILED',
  INVALID_TOOL_PARAMETERS: 'INVALID_TOOL_PARAMETERS',
  TOOL_RESULT_TIMEOUT: 'TOOL_RESULT_TIMEOUT',
  TOOL_REGISTRATION_FAILED: 'TOOL_REGISTRATION_FAILED',
  /** A server tool ran past its time limit (the LLM gateway reports it as TOOL_EXECUTION_FAILED). */
  TOOL_TIMEOUT: 'TOOL_TIMEOUT',
  /** The tool exists but its provider (an upstream server) cannot be reached right now. */
  TOOL_UNAVAILABLE: 'TOOL_UNAVAILABLE',
  /** No such route or resource (an HTTP path nobody serves). */
  NOT_FOUND: 'NOT_FOUND',
  UNAUTHORIZED: 'UNAUTHORIZED',
  FORBIDDEN: 'FORBIDDEN',
  PAYLOAD_TOO_LARGE: 'PAYLOAD_TOO_LARGE',
  UNSUPPORTED_VERSION: 'UNSUPPORTED_VERSION',
} as const;

export type GatewayErrorCode = (typeof GatewayErrorCode)[keyof typeof GatewayErrorCode];

/** An error whose message is safe to show to a client; anything else is reported as internal. */
export class GatewayError extends Error {
  constructor(
    readonly code: GatewayErrorCode,
    message: string,
    readonly details?: string,
  ) {
    super(message);
    this.name = 'GatewayError';
  }
}
