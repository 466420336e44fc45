import { LlmGatewayClient } from './sdk/index.js';
import { setupCatalogue } from './catalogue.js';
import { setupChat } from './chat.js';
import { setupDeviceTools } from './device-tools.js';
import { deviceIdProblem, setupDevices } from './devices.js';
import { $, httpOriginOf } from './dom.js';
import { meaningOf } from './error-codes.js';
import { setupFrameLog } from './frame-log.js';
import { whyNotConnected } from './reachability.js';
import { setupTalk } from './talk.js';

/**
 * @typedef {import('./sdk/index.js').LlmGatewayClient} Client
 * @typedef {import('./sdk/index.js').ClientTool} ClientTool
 * @typedef {import('./sdk/index.js').LlmGatewayClientEvents} Events
 * @typedef {<K extends keyof Events>(type: K, listener: (payload: Events[K]) => void) => void} Listen
 * @typedef {{connected(client: Client, listen: Listen): void, disconnected(): void}} ViewLifecycle
 */

/**
 * The web test console: one connection to the LLM gateway at a time (through the client SDK,
 * the browser build the gateway serves at /console/sdk/), shared by the views.
 */

/** Reconnections the console tries before it gives up and says so. */
const RECONNECT_ATTEMPTS = 8;

/** How the gateway closes a device's connection when another connection takes its id. */
const CLOSE_REPLACED = 4409;

const STATE_TEXT = {
  idle: 'Not connected',
  connecting: 'Connecting…',
  open: 'Connected',
  reconnecting: 'Reconnecting…',
  closing: 'Closing…',
  closed: 'Not connected',
};

const form = $('#connection');
const urlInput = $('#gateway-url');
const tokenInput = $('#token');
const deviceIdInput = $('#device-id');
const stateOutput = $('#connection-state');
const problem = $('#connection-problem');
const disconnectButton = $('#disconnect');

/**
 * The gateway this page serves, unless the page was opened as `/?gateway=ws://other:9400/` to
 * talk to another one (that gateway must allow this page's origin: its ALLOWED_ORIGINS).
 */
urlInput.value = new URLSearchParams(location.search).get('gateway') ?? `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/`;

/** Where the views read and call tools: the HTTP side of the gateway the URL names. */
const gateway = () => ({ origin: httpOriginOf(urlInput.value), token: tokenInput.value.trim() });

const catalogue = setupCatalogue(gateway);
const devices = setupDevices(gateway);
const frameLog = setupFrameLog();
/** @type {ViewLifecycle[]} */
const views = [setupChat(), setupDeviceTools(), frameLog];
// A connection of its own, as a xiaozhi device: it lives beside the chat's, not through it.
setupTalk(() => ({ url: urlInput.value, ...gateway() }), frameLog);

/** @type {Client | undefined} */
let client;
/** @type {(() => void)[]} */
let unsubscribe = [];

/** @param {string} state */
function showState(state) {
  stateOutput.dataset.state = state;
  stateOutput.textContent = STATE_TEXT[/** @type {keyof typeof STATE_TEXT} */ (state)] ?? state;
  disconnectButton.hidden = state === 'idle' || state === 'closed';
  if (state === 'closed') views.forEach((view) => view.disconnected());
}

/** @param {string} [text] @param {string} [reason] what kind of problem, for people skimming and for tests */
function showProblem(text, reason) {
  problem.textContent = text ?? '';
  problem.hidden = !text;
  if (reason) problem.dataset.reason = reason;
  else delete problem.dataset.reason;
}

async function disconnect() {
  const current = client;
  client = undefined;
  await current?.close();
  unsubscribe.forEach((remove) => remove());
  unsubscribe = [];
  views.forEach((view) => view.disconnected());
  showState('idle');
  if (current) devices.changed();
}

/**
 * The URL the chat connects to: the gateway's, with `device_id` when the page is to act as a
 * device (browsers cannot set the Device-Id header). Throws when the id breaks the gateway's rule.
 * @param {string} deviceId
 */
function connectionUrl(deviceId) {
  if (deviceId === '') return urlInput.value;
  const problem = deviceIdProblem(deviceId);
  if (problem) throw new TypeError(`Device id "${deviceId}": ${problem}`);
  const url = new URL(urlInput.value);
  url.searchParams.set('device_id', deviceId);
  return url.toString();
}

async function connect() {
  await disconnect();
  showProblem();
  const deviceId = deviceIdInput.value.trim();
  let next;
  try {
    next = new LlmGatewayClient({ url: connectionUrl(deviceId), token: tokenInput.value.trim(), reconnect: { maxAttempts: RECONNECT_ATTEMPTS } });
  } catch (error) {
    showProblem(/** @type {Error} */ (error).message, 'invalid');
    return;
  }
  client = next;
  /** @type {Listen} */
  const listen = (type, listener) => unsubscribe.push(next.on(type, listener));
  listen('state', showState);
  // Reconnecting would take the id back from the connection that just took it, and so on for ever.
  // Closed once the client has scheduled its reconnection, which closing then cancels.
  listen('disconnected', ({ code, reason }) => {
    if (code !== CLOSE_REPLACED || client !== next) return;
    queueMicrotask(
      () =>
        void disconnect().then(() =>
          showProblem(
            `${reason} (close ${code}): another connection named itself device "${deviceId}", so this page let it have the id and disconnected.`,
            'replaced',
          ),
        ),
    );
  });
  views.forEach((view) => view.connected(next, listen));
  try {
    await next.connect();
    void catalogue.load();
    devices.changed();
  } catch (error) {
    if (client !== next) return;
    const { code, message } = /** @type {any} */ (error);
    // The socket opened but no session came: the gateway is there, the probe would tell nothing.
    if (code !== 'CONNECT_FAILED' || /^No session/.test(message)) {
      showProblem([message, meaningOf(code)].filter(Boolean).join(' '), 'session');
      return;
    }
    const { origin, token } = gateway();
    const why = await whyNotConnected(origin, token);
    const asDevice =
      deviceId && why.reason === 'upgrade-refused'
        ? ` As device "${deviceId}", it is also refused when the token may not connect as that device (its devices in the tokens file) or when the id belongs to another token, connected or not (DEVICE_ID_TAKEN).`
        : '';
    if (client === next) showProblem(`${message} ${why.text}${asDevice}`, why.reason);
  }
}

form.addEventListener('submit', (/** @type {SubmitEvent} */ event) => {
  event.preventDefault();
  void connect();
});
disconnectButton.addEventListener('click', () => void disconnect());

for (const tab of document.querySelectorAll('[data-tab]')) {
  tab.addEventListener('click', () => {
    const name = /** @type {HTMLElement} */ (tab).dataset.tab;
    document.querySelectorAll('[data-tab]').forEach((other) => other.setAttribute('aria-selected', String(other === tab)));
    document.querySelectorAll('[data-view]').forEach((view) => {
      /** @type {HTMLElement} */ (view).hidden = /** @type {HTMLElement} */ (view).dataset.view !== name;
    });
    document.body.dataset.tab = name;
    if (name === 'catalogue') void catalogue.load();
    devices.setShown(name === 'devices');
  });
}
document.body.dataset.tab = 'chat';
document.body.dataset.ready = 'true';
