import { GATEWAY_ERROR_CODES, GatewayErrorCode as GatewayErrorCodeName } from './error-codes';

/**
 * The one internal error vocabulary (the list is `GATEWAY_ERROR_CODES`, in error-codes.ts).
 * It reuses the LLM gateway spec's codes (spec 5.4) and adds the few that other protocols need
 * to tell apart; each protocol maps a code to its own wire form (an `error` frame, a JSON-RPC
 * error, an HTTP status, a LiteMCP `error: true` result).
 */
export const GatewayErrorCode = Object.freeze(
  Object.fromEntries(GATEWAY_ERROR_CODES.map((code) => [code, code])) as { readonly [Code in GatewayErrorCodeName]: Code },
);

export type GatewayErrorCode = GatewayErrorCodeName;

/** An error whose message is safe to show to a client; anything else is reported as internal. */
export class GatewayError extends Error {
  constructor(
    readonly code: GatewayErrorCode,
    message: string,
    readonly details?: string,
    /** What the client is told beside the code and message, by name (a refused push's `push_id`). */
    readonly fields?: Readonly<Record<string, string>>,
  ) {
    super(message);
    this.name = 'GatewayError';
  }
}
