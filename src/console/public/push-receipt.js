import { describeRefusal, request } from './fleet-requests.js';

/** @typedef {import('./catalogue.js').Gateway} Gateway */

/** A receipt's states (src/fleet/receipts/push-state.ts), in words. */
export const RECEIPT_STATES = {
  queued: 'queued: waiting behind the turn in flight, or on its way to the device',
  held: 'held: kept for the device until it connects',
  sent: 'sent: the device is saying it',
  spoken: 'spoken: the device finished saying it',
  interrupted: 'interrupted',
  expired: 'expired: never said',
  refused: 'refused',
};

const FINAL = new Set(['spoken', 'interrupted', 'expired', 'refused']);

/** How often a receipt is read again while it is not final. */
export const RECEIPT_POLL_MS = 1000;
/** Reads of one receipt at most: a push held for hours is not followed for hours. */
export const RECEIPT_POLLS_MAX = 300;

/**
 * Follows a push's delivery receipt (`GET /pushes/<id>`) in `output`, reading it again every
 * {@link RECEIPT_POLL_MS} until it is final, refused to this token, or read
 * {@link RECEIPT_POLLS_MAX} times. One timer at a time; the function returned stops it.
 * @param {() => Gateway} gateway @param {string} pushId @param {HTMLElement} output
 * @returns {() => void} stops following
 */
export function followReceipt(gateway, pushId, output) {
  let stopped = false;
  let polls = 0;
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let timer;
  /** @param {string} text @param {string} state */
  const show = (text, state) => {
    output.textContent = `Receipt ${pushId}: ${text}`;
    output.dataset.state = state;
  };

  const read = async () => {
    timer = undefined;
    polls += 1;
    try {
      const answer = await request(gateway(), 'GET', `/pushes/${encodeURIComponent(pushId)}`);
      if (stopped) return;
      if (!answer.ok) return show(describeRefusal(answer).headline, 'unreadable');
      const state = String(answer.body?.state);
      const reason = answer.body?.history?.at?.(-1)?.reason;
      show(`${RECEIPT_STATES[/** @type {keyof typeof RECEIPT_STATES} */ (state)] ?? state}${reason ? ` (${reason})` : ''}`, state);
      if (FINAL.has(state)) return;
    } catch (error) {
      if (stopped) return;
      show(`no answer (${/** @type {Error} */ (error).message}); reading again`, 'unreachable');
    }
    if (polls >= RECEIPT_POLLS_MAX) {
      output.textContent += `. No longer followed here; GET /pushes/${pushId} still answers.`;
      return;
    }
    timer = setTimeout(() => void read(), RECEIPT_POLL_MS);
  };

  show('reading…', 'reading');
  void read();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
