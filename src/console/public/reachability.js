import { bearer } from './dom.js';
import { meaningOf } from './error-codes.js';

/**
 * @typedef {'unauthorized' | 'forbidden' | 'unreachable' | 'upgrade-refused'} RefusalReason
 * @typedef {{reason: RefusalReason, text: string}} Refusal
 */

/**
 * Why a WebSocket to a gateway could not open. Browsers hide the upgrade's HTTP status (a
 * refused token and a stopped gateway both read as "error, close 1006"), so this asks the
 * gateway's catalogue, `GET /tools`, which has the same bearer check, and reads its status:
 *
 * - 401 or 403: the token is missing or refused;
 * - no answer at all: nothing listens there, or (for a gateway other than the one serving this
 *   page) it refuses pages of this origin, which a browser cannot tell apart either;
 * - any other answer: the gateway is there and takes the token; the upgrade itself was refused.
 * @param {string} origin the gateway's HTTP origin
 * @param {string} token
 * @returns {Promise<Refusal>}
 */
export async function whyNotConnected(origin, token) {
  let response;
  try {
    response = await fetch(`${origin}/tools`, { headers: bearer(token) });
  } catch {
    const elsewhere = origin !== location.origin;
    return {
      reason: 'unreachable',
      text:
        `UNREACHABLE: nothing answered at ${origin}: is the gateway running, and are the address and port right?` +
        (elsewhere ? ` If it is running, it may refuse pages from ${location.origin}: add that to its ALLOWED_ORIGINS.` : ''),
    };
  }
  await response.body?.cancel().catch(() => undefined);
  if (response.status === 401) return { reason: 'unauthorized', text: `UNAUTHORIZED (HTTP 401): ${meaningOf('UNAUTHORIZED')}` };
  if (response.status === 403) return { reason: 'forbidden', text: `FORBIDDEN (HTTP 403): ${meaningOf('FORBIDDEN')}` };
  return {
    reason: 'upgrade-refused',
    text: `The gateway at ${origin} answers and accepts the token (HTTP ${response.status}), but refused the WebSocket: check the path, or it may be full (CLOUD_MAX_CONNECTIONS).`,
  };
}
