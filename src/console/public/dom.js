/**
 * Small DOM helpers for the console. Everything that comes from the gateway or the model is
 * set as text, never parsed as HTML.
 */

/**
 * Creates an element. `props`: `text`, `class`, `dataset`, `on<event>` listeners, and any
 * attribute (`true` sets it empty, `false` or `undefined` leaves it out).
 * @param {string} tag
 * @param {Record<string, any>} [props]
 * @param {...(Node | string | undefined | null | false | (Node | string)[])} children
 * @returns {HTMLElement}
 */
export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === false || value === null) continue;
    if (key === 'text') node.textContent = String(value);
    else if (key === 'class') node.className = value;
    else if (key === 'dataset') Object.assign(node.dataset, value);
    else if (key.startsWith('on') && typeof value === 'function') node.addEventListener(key.slice(2), value);
    else if (key === 'value') node.value = value;
    else node.setAttribute(key, value === true ? '' : String(value));
  }
  for (const child of children.flat()) {
    if (child !== undefined && child !== null && child !== false) node.append(child);
  }
  return node;
}

/** @param {string} selector @returns {any} */
export const $ = (selector) => {
  const node = document.querySelector(selector);
  if (!node) throw new Error(`The page has no ${selector}`);
  return node;
};

/** Indented JSON for people. @param {unknown} value */
export const pretty = (value) => JSON.stringify(value, null, 2) ?? String(value);

/** One-line JSON, cut to `max` characters. @param {unknown} value @param {number} [max] */
export function brief(value, max = 140) {
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value));
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** `HH:MM:SS.mmm` of a date, local time. @param {Date} date */
export function clock(date) {
  const two = (/** @type {number} */ n) => String(n).padStart(2, '0');
  return `${two(date.getHours())}:${two(date.getMinutes())}:${two(date.getSeconds())}.${String(date.getMilliseconds()).padStart(3, '0')}`;
}

/** The HTTP origin of a gateway's WebSocket URL (`ws://h:9400/` -> `http://h:9400`). @param {string} wsUrl */
export function httpOriginOf(wsUrl) {
  const url = new URL(wsUrl);
  url.protocol = url.protocol === 'wss:' ? 'https:' : 'http:';
  return url.origin;
}

/** @param {string} token @returns {Record<string, string>} */
export const bearer = (token) => (token ? { Authorization: `Bearer ${token}` } : {});

/** Keeps a scrolled list at its bottom while the reader is there. @param {HTMLElement} list @param {() => void} change */
export function appendKeepingBottom(list, change) {
  const atBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 40;
  change();
  if (atBottom) list.scrollTop = list.scrollHeight;
}
