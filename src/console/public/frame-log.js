import { $, appendKeepingBottom, brief, clock, el, pretty } from './dom.js';

/** @typedef {import('./app.js').ViewLifecycle} ViewLifecycle */

/** Frames kept on the page; older ones go, so a long session does not grow without end. */
const MAX_FRAMES = 1000;

/**
 * The live frame log: every frame sent and received, with its time and direction, one line
 * each, the whole frame a click away.
 * @returns {ViewLifecycle}
 */
export function setupFrameLog() {
  const list = $('#frames');
  const filter = $('#frame-filter');

  /** @param {HTMLElement} item */
  const applyFilter = (item) => {
    const words = filter.value.trim().toLowerCase();
    item.hidden = words !== '' && !String(item.dataset.type).includes(words);
  };

  filter.addEventListener('input', () => list.querySelectorAll('li').forEach(applyFilter));
  $('#frames-clear').addEventListener('click', () => list.replaceChildren());

  return {
    connected(_client, listen) {
      listen('frame', ({ direction, text, frame, at }) => {
        const type = frame?.type ?? 'unreadable';
        const { type: _type, timestamp: _timestamp, ...fields } = /** @type {Record<string, unknown>} */ (frame ?? { text });
        const item = el(
          'li',
          { class: `frame ${direction}`, dataset: { type, direction } },
          el(
            'details',
            {},
            el(
              'summary',
              {},
              el('time', { text: clock(at) }),
              el('span', { class: 'direction', title: direction === 'out' ? 'sent' : 'received', text: direction === 'out' ? '→' : '←' }),
              el('span', { class: 'type', text: type }),
              el('span', { class: 'fields', text: brief(fields, 120) }),
            ),
            el('pre', { text: frame ? pretty(frame) : text }),
          ),
        );
        applyFilter(item);
        appendKeepingBottom(list, () => {
          list.append(item);
          while (list.childElementCount > MAX_FRAMES) list.firstElementChild?.remove();
        });
      });
    },
    disconnected() {},
  };
}
