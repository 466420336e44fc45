import { $, appendKeepingBottom, brief, clock, el, pretty } from './dom.js';

/**
 * @typedef {import('./app.js').ViewLifecycle} ViewLifecycle
 * @typedef {'in' | 'out'} Direction
 * @typedef {{direction: Direction, text: string, frame?: any, at: Date, via?: string, repeated?: string[]}} LoggedFrame
 * @typedef {{message(direction: Direction, text: string, frame: any): void, binary(direction: Direction, bytes: number): void}} ConnectionLog
 * @typedef {ViewLifecycle & {connection(via: string, options?: {repeated?: string[]}): ConnectionLog}} FrameLog
 */

/** Frames kept on the page; older ones go, so a long session does not grow without end. */
const MAX_FRAMES = 1000;

/** Fields no frame's one-line summary repeats: the frame's type has its own column. */
const ALWAYS_LEFT_OUT = ['type', 'timestamp'];

/**
 * The live frame log: every frame sent and received, with its time and direction, one line
 * each, the whole frame a click away. The LLM gateway connection's frames come from the client
 * SDK; other connections of the page (the Talk view's xiaozhi device) log theirs through
 * {@link FrameLog.connection}, marked with its name.
 * @returns {FrameLog}
 */
export function setupFrameLog() {
  const list = $('#frames');
  const filter = $('#frame-filter');
  /**
   * The line of the binary frames being logged. Consecutive binary frames of one connection
   * and direction share it: audio comes 16 packets a second, and a line each would push every
   * message out of the log within a minute.
   * @type {{item: HTMLElement, direction: Direction, via: string, sizes: number[], bytes: number} | undefined}
   */
  let run;

  /** @param {HTMLElement} item */
  const applyFilter = (item) => {
    const words = filter.value.trim().toLowerCase();
    const searched = `${item.dataset.type} ${item.dataset.via ?? ''}`.toLowerCase();
    item.hidden = words !== '' && !searched.includes(words);
  };

  filter.addEventListener('input', () => list.querySelectorAll('li').forEach(applyFilter));
  $('#frames-clear').addEventListener('click', () => list.replaceChildren());

  /** @param {HTMLElement} item */
  const append = (item) => {
    applyFilter(item);
    appendKeepingBottom(list, () => {
      list.append(item);
      while (list.childElementCount > MAX_FRAMES) list.firstElementChild?.remove();
    });
  };

  /**
   * @param {{direction: Direction, type: string, via?: string, at: Date, summary: string, dataset?: Record<string, string>}} line
   * @param {HTMLElement} details what a click on the line shows
   */
  const lineItem = ({ direction, type, via, at, summary, dataset }, details) =>
    el(
      'li',
      { class: `frame ${direction}`, dataset: { type, direction, ...(via ? { via } : {}), ...dataset } },
      el(
        'details',
        {},
        el(
          'summary',
          {},
          el('time', { text: clock(at) }),
          el('span', { class: 'direction', title: direction === 'out' ? 'sent' : 'received', text: direction === 'out' ? '→' : '←' }),
          via ? el('span', { class: 'via', title: `On the page's ${via} connection`, text: via }) : undefined,
          el('span', { class: 'type', text: type }),
          el('span', { class: 'fields', text: summary }),
        ),
        details,
      ),
    );

  /** @param {LoggedFrame} logged */
  const record = ({ direction, text, frame, at, via, repeated = [] }) => {
    const leftOut = new Set([...ALWAYS_LEFT_OUT, ...repeated]);
    const fields = frame && typeof frame === 'object' ? Object.fromEntries(Object.entries(frame).filter(([key]) => !leftOut.has(key))) : { text };
    append(lineItem({ direction, type: frame?.type ?? 'unreadable', via, at, summary: brief(fields, 120) }, el('pre', { text: frame ? pretty(frame) : text })));
  };

  /** @param {Direction} direction @param {number} bytes @param {string} via */
  const recordBinary = (direction, bytes, via) => {
    if (!run || run.direction !== direction || run.via !== via || list.lastElementChild !== run.item) {
      const sizes = el('pre');
      const item = lineItem({ direction, type: 'binary', via, at: new Date(), summary: '' }, sizes);
      // The sizes are written out when they are looked at, not on every packet.
      const details = /** @type {HTMLDetailsElement} */ (item.querySelector('details'));
      const current = { item, direction, via, sizes: /** @type {number[]} */ ([]), bytes: 0 };
      details.addEventListener('toggle', () => {
        if (details.open) sizes.textContent = `${current.sizes.length} binary frames of ${current.sizes.join(', ')} bytes`;
      });
      run = current;
      append(item);
    }
    run.sizes.push(bytes);
    run.bytes += bytes;
    run.item.dataset.frames = String(run.sizes.length);
    const count = run.sizes.length;
    /** @type {HTMLElement} */ (run.item.querySelector('.fields')).textContent =
      count === 1 ? `${bytes} bytes` : `${count} frames, ${run.bytes.toLocaleString('en')} bytes (last ${bytes} bytes)`;
  };

  return {
    connected(_client, listen) {
      listen('frame', record);
    },
    disconnected() {},
    connection(via, { repeated = [] } = {}) {
      return {
        message: (direction, text, frame) => record({ direction, text, frame, at: new Date(), via, repeated }),
        binary: (direction, bytes) => recordBinary(direction, bytes, via),
      };
    },
  };
}
