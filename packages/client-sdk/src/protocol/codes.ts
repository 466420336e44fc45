/**
 * The vocabulary of the LLM gateway's wire format that both ends must agree on: error codes,
 * language codes and the limits a request is checked against. The gateway validates with these
 * very values, and this client checks its requests with them before sending.
 */

/**
 * The gateway's error vocabulary, shared by all its protocols. On this API `error` frames carry
 * only the spec's codes (section 5.4); TOOL_NOT_FOUND, TOOL_EXECUTION_FAILED and
 * INVALID_TOOL_PARAMETERS inside a turn are fed to the model and shown in `tool_call` frames.
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
] as const;

export type GatewayErrorCode = (typeof GATEWAY_ERROR_CODES)[number];

/** The response languages `configure {language}` accepts. */
export const LANGUAGE_CODES = ['zh', 'en', 'ja', 'ko', 'de', 'fr', 'ru', 'pt', 'es', 'it'] as const;

export type LanguageCode = (typeof LANGUAGE_CODES)[number];

/** What `configure` accepts for the model's settings, and how long ids and lists may be. */
export const LIMITS = {
  temperature: { min: 0, max: 1 },
  /** A runaway `max_tokens` would only tie the model up. */
  maxTokens: { min: 1, max: 32768 },
  /** Session ids, call ids, timestamps: correlation keys, not payloads. */
  idLength: 256,
  /** Tools one `register_tools` frame may carry; the gateway's per-connection limit may be lower. */
  toolsPerFrame: 256,
  /** Nesting of any frame: arrays and objects inside one another. */
  frameDepth: 64,
  /** The text a device says it played, in `cancel`. */
  spokenLength: 65536,
} as const;

/** Largest `max_tokens` the gateway accepts in `configure`. */
export const MAX_TOKENS_CEILING = LIMITS.maxTokens.max;
