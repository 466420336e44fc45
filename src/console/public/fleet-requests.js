import { bearer, el } from './dom.js';
import { meaningOf } from './error-codes.js';

/**
 * Requests to the fleet's HTTP routes from the Devices view, and how they ended, in words: what
 * the device cards, the firmware section and the activation form share.
 * @typedef {import('./catalogue.js').Gateway} Gateway
 * @typedef {{ok: boolean, status: number, body: any}} Answer what the gateway answered: its status and JSON body
 * @typedef {{ok: boolean, headline: string, details?: (Node | undefined)[]}} Outcome how a request ended, in words
 */

/**
 * One request to the fleet's HTTP routes. A refusal comes back as an answer like any other;
 * only a gateway that cannot be reached throws.
 * @param {Gateway} gateway @param {'GET' | 'POST' | 'PUT'} method @param {string} path @param {unknown} [body]
 * @returns {Promise<Answer>}
 */
export async function request(gateway, method, path, body) {
  const response = await fetch(`${gateway.origin}${path}`, {
    method,
    headers: { ...bearer(gateway.token), ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { ok: response.ok, status: response.status, body: await response.json().catch(() => null) };
}

/**
 * A refused request in words: its code, the HTTP status, the gateway's message, and what the
 * code means to someone at the console (who called the device directly: no model was involved).
 * @param {Answer} answer
 */
export function describeRefusal(answer) {
  const error = answer.body?.error;
  if (typeof error?.code !== 'string') return { headline: `HTTP ${answer.status}: the answer carries no error code`, meaning: '' };
  return { headline: `${error.code} (HTTP ${answer.status}): ${error.message ?? 'the gateway gave no reason'}`, meaning: meaningOf(error.code, 'direct') };
}

/** @param {string} headline @param {string} [meaning] @returns {Outcome} */
export const failure = (headline, meaning) => ({ ok: false, headline, details: [meaning ? el('p', { class: 'meaning', text: meaning }) : undefined] });

/** @param {Answer} answer @returns {Outcome} */
export const refusal = (answer) => {
  const { headline, meaning } = describeRefusal(answer);
  return failure(headline, meaning);
};

/** The console's own refusal, before anything was sent. @param {string} why @returns {Outcome} */
export const refusedHere = (why) => failure(`INVALID_INPUT: ${why}`, meaningOf('INVALID_INPUT'));

/** @param {string} origin @param {Error} error */
export const unreachable = (origin, error) =>
  failure(`UNREACHABLE: no answer from ${origin}: ${error.message}`, 'Is the gateway running, and does it allow this page (ALLOWED_ORIGINS)?');

/**
 * Shows in `result` how the requests of one form ended. An answer that arrives after a newer
 * request of the same form was sent is dropped, so what is shown is always the last request's.
 * @param {HTMLElement} result
 * @param {() => Gateway} gateway
 * @returns {(send: () => Promise<Outcome>) => Promise<void>}
 */
export function reporter(result, gateway) {
  let latest = 0;
  return async (send) => {
    const mine = ++latest;
    delete result.dataset.ok;
    result.replaceChildren(el('p', { text: 'Sending…' }));
    const outcome = await send().catch((/** @type {Error} */ error) => unreachable(gateway().origin, error));
    if (mine !== latest) return;
    result.dataset.ok = String(outcome.ok);
    result.replaceChildren(
      el('p', { class: outcome.ok ? 'ok' : 'failed', text: outcome.headline }),
      ...(outcome.details ?? []).filter((node) => node !== undefined),
    );
  };
}

/** The path of a device's route; ids and tool names come from devices, so they are encoded. @param {string} id @param {...string} rest */
export const devicePath = (id, ...rest) => ['/devices', id, ...rest].map((part, index) => (index === 0 ? part : encodeURIComponent(part))).join('/');
