/**
 * The vocabulary of the LLM gateway's wire format that both ends must agree on: error codes,
 * language codes and the limits a request is checked against. The gateway validates with these
 * very values, and the client SDK (which is built with a copy of this folder) checks its requests
 * with them before sending.
 */

export { GATEWAY_ERROR_CODES, type GatewayErrorCode } from './error-codes.js';
export { LANGUAGE_CODES, type LanguageCode } from './languages.js';

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
