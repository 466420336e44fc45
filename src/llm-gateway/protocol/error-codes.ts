/**
 * The gateway's error codes, as the LLM gateway's wire contract carries them. In the server this
 * file forwards core's vocabulary; the client SDK's build (packages/client-sdk/scripts/
 * copy-protocol.mjs) puts `src/core/errors/error-codes.ts` itself in its place.
 */
export { GATEWAY_ERROR_CODES, type GatewayErrorCode } from '../../core/errors/error-codes';
