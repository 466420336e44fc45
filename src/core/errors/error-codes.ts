/**
 * The gateway's error vocabulary, shared by all its protocols and defined here only: the LLM
 * gateway's wire contract, and so the client SDK, take it from this file. On the LLM gateway
 * `error` frames carry only the spec's codes (section 5.4); TOOL_NOT_FOUND, TOOL_EXECUTION_FAILED
 * and INVALID_TOOL_PARAMETERS inside a turn are fed to the model and shown in `tool_call` frames.
 */
export const GATEWAY_ERROR_CODES = [
  'INVALID_MESSAGE',
  'UNKNOWN_MESSAGE_TYPE',
  'LLM_ERROR',
  'SESSION_ERROR',
  'TIMEOUT',
  'INTERNAL_ERROR',
  'TOOL_NOT_FOUND',
  'TOOL_EXECUTION_FAILED',
  'INVALID_TOOL_PARAMETERS',
  'TOOL_RESULT_TIMEOUT',
  'TOOL_REGISTRATION_FAILED',
  /** A server tool ran past its time limit (this API reports it as TOOL_EXECUTION_FAILED). */
  'TOOL_TIMEOUT',
  /** The tool exists but its provider (an upstream server) cannot be reached right now. */
  'TOOL_UNAVAILABLE',
  /** No such route or resource (an HTTP path nobody serves). */
  'NOT_FOUND',
  'UNAUTHORIZED',
  'FORBIDDEN',
  'PAYLOAD_TOO_LARGE',
  'UNSUPPORTED_VERSION',
  /** A token's rate limit (tokens file) is spent: `details.retry_after_s` says when to try again. */
  'RATE_LIMITED',
  /** The device named is not connected to any instance (and the push was not to be held for it). */
  'DEVICE_OFFLINE',
  /** A device's queue of held or waiting pushes is full: try again once it has spoken them. */
  'DEVICE_BUSY',
  /** The device id is in use: another principal owns it, or (to release it) it is connected. */
  'DEVICE_ID_TAKEN',
  /** A device's or its principal's budget (LLM tokens, synthesized characters, recognized audio) is spent for the day or month: nothing more is spent until it resets. */
  'BUDGET_EXCEEDED',
] as const;

export type GatewayErrorCode = (typeof GATEWAY_ERROR_CODES)[number];
