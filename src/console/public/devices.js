import { argumentsTemplate } from './catalogue.js';
import { $, bearer, clock, el, pretty } from './dom.js';
import { meaningOf } from './error-codes.js';

/**
 * @typedef {import('./catalogue.js').Gateway} Gateway
 * @typedef {{name: string, agent_name: string, description: string, input_schema: unknown, visibility: string}} OfferedTool
 * @typedef {{id: string, instance: string, connected_at: string, tools: OfferedTool[]}} Device
 * @typedef {{ok: boolean, status: number, body: any}} Answer what the gateway answered: its status and JSON body
 * @typedef {{ok: boolean, headline: string, details?: (Node | undefined)[]}} Outcome how a request ended, in words
 */

/** How often the list is read again while the view is on screen. */
export const REFRESH_MS = 5000;

/** Who may call a tool, by its `visibility`. */
const VISIBILITY = {
  both: 'The model and agents may call it',
  agents: 'Agents only (MCP, UTCP, LiteMCP, this page); never the model',
  model: "The device's own model only",
};

/** What a push's receipt says happened to it. */
const DELIVERY = {
  spoken: 'Sent to the device',
  held: 'Held for the device until it connects',
};

/**
 * The device-id rule of the gateway (src/fleet/device-id.ts), checked before connecting: a
 * browser never learns why an upgrade was refused, so a bad id would only read as "closed".
 * @param {string} id
 * @returns {string | undefined} why `id` is not a device id
 */
export function deviceIdProblem(id) {
  if (!/^[A-Za-z0-9_:-]{1,62}$/.test(id)) return 'A device id is 1-62 letters, digits, "_", "-" or ":" (a MAC address such as AA:BB:CC:DD:EE:FF fits)';
  if (id.includes('__') || id.endsWith('_')) return 'A device id must not contain "__" or end with "_"';
  return undefined;
}

/**
 * One request to the fleet's HTTP routes. A refusal comes back as an answer like any other;
 * only a gateway that cannot be reached throws.
 * @param {Gateway} gateway @param {'GET' | 'POST'} method @param {string} path @param {unknown} [body]
 * @returns {Promise<Answer>}
 */
async function request(gateway, method, path, body) {
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
function describeRefusal(answer) {
  const error = answer.body?.error;
  if (typeof error?.code !== 'string') return { headline: `HTTP ${answer.status}: the answer carries no error code`, meaning: '' };
  return { headline: `${error.code} (HTTP ${answer.status}): ${error.message ?? 'the gateway gave no reason'}`, meaning: meaningOf(error.code, 'direct') };
}

/** @param {string} headline @param {string} [meaning] @returns {Outcome} */
const failure = (headline, meaning) => ({ ok: false, headline, details: [meaning ? el('p', { class: 'meaning', text: meaning }) : undefined] });

/** @param {Answer} answer @returns {Outcome} */
const refusal = (answer) => {
  const { headline, meaning } = describeRefusal(answer);
  return failure(headline, meaning);
};

/** The console's own refusal, before anything was sent. @param {string} why @returns {Outcome} */
const refusedHere = (why) => failure(`INVALID_INPUT: ${why}`, meaningOf('INVALID_INPUT'));

/** @param {string} origin @param {Error} error */
const unreachable = (origin, error) =>
  failure(`UNREACHABLE: no answer from ${origin}: ${error.message}`, 'Is the gateway running, and does it allow this page (ALLOWED_ORIGINS)?');

/**
 * Shows in `result` how the requests of one form ended. An answer that arrives after a newer
 * request of the same form was sent is dropped, so what is shown is always the last request's.
 * @param {HTMLElement} result
 * @param {() => Gateway} gateway
 * @returns {(send: () => Promise<Outcome>) => Promise<void>}
 */
function reporter(result, gateway) {
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

/** What a push's receipt says, in words. @param {Answer} answer @returns {Outcome} */
function receipt(answer) {
  if (!answer.ok) return refusal(answer);
  const { delivered, turn_id: turnId } = answer.body ?? {};
  return { ok: true, headline: `${DELIVERY[/** @type {keyof typeof DELIVERY} */ (delivered)] ?? delivered} (HTTP ${answer.status}, turn ${turnId})` };
}

/** The path of a device's route; ids and tool names come from devices, so they are encoded. @param {string} id @param {...string} rest */
const devicePath = (id, ...rest) => ['/devices', id, ...rest].map((part, index) => (index === 0 ? part : encodeURIComponent(part))).join('/');

/**
 * One tool a device offers, with a form that calls it as agents do (`POST /devices/<id>/tools/<tool>`).
 * Everything shown comes from the device, so all of it is set as text.
 * @param {string} deviceId @param {OfferedTool} tool @param {() => Gateway} gateway
 */
function toolItem(deviceId, tool, gateway) {
  const args = el('textarea', { rows: 3, spellcheck: 'false', 'aria-label': `Arguments of ${tool.name} (JSON object)` });
  args.value = pretty(argumentsTemplate(tool.input_schema));
  const result = el('div', { class: 'call-result', 'aria-live': 'polite' });
  const report = reporter(result, gateway);

  const call = (/** @type {SubmitEvent} */ event) => {
    event.preventDefault();
    void report(async () => {
      let parsed;
      try {
        parsed = JSON.parse(args.value);
      } catch (error) {
        return refusedHere(`the arguments are not JSON: ${/** @type {Error} */ (error).message}`);
      }
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
        return refusedHere('the arguments must be a JSON object, such as {"room": "hall"}');
      const started = performance.now();
      const answer = await request(gateway(), 'POST', devicePath(deviceId, 'tools', tool.name), parsed);
      if (!answer.ok) return refusal(answer);
      return {
        ok: true,
        headline: `HTTP ${answer.status}, succeeded in ${Math.round(performance.now() - started)} ms`,
        details: [el('pre', { class: 'content', text: pretty(answer.body?.result) })],
      };
    });
  };

  return el(
    'li',
    { class: 'fleet-tool', dataset: { tool: tool.name } },
    el(
      'details',
      {},
      el(
        'summary',
        {},
        el('strong', { text: tool.name }),
        el('span', { class: 'badge', title: VISIBILITY[/** @type {keyof typeof VISIBILITY} */ (tool.visibility)], text: tool.visibility }),
        el('code', { class: 'agent-name', title: 'The name agents call it by', text: tool.agent_name }),
        el('p', { class: 'description', text: tool.description }),
      ),
      el('h3', { text: 'Input schema' }),
      el('pre', { text: pretty(tool.input_schema) }),
      el(
        'form',
        { class: 'call', onsubmit: call },
        el('label', {}, 'Arguments (JSON object)', args),
        el('div', { class: 'row' }, el('button', { type: 'submit', text: 'Call' })),
      ),
      result,
    ),
  );
}

/**
 * One online device: what it offers agents, and forms to call its tools, make it say something
 * and start a turn on it. Refreshing the list updates the card in place, so what the reader
 * opened and typed stays.
 */
class DeviceCard {
  /** @param {Device} device @param {() => Gateway} gateway */
  constructor(device, gateway) {
    this.id = device.id;
    this.gateway = gateway;
    /** The tools' items, by name, with the JSON they were built from. @type {Map<string, {json: string, item: HTMLElement}>} */
    this.tools = new Map();
    this.since = el('span', { class: 'since' });
    this.instance = el('span', { class: 'badge', title: 'The gateway instance holding its connection' });
    this.toolList = el('ul', { class: 'fleet-tools' });
    this.noTools = el('p', { class: 'hint', text: 'It offers agents no tools (tools it registered with visibility "model" stay with its own model).' });

    const sayText = el('input', { name: 'text', required: true, placeholder: 'What the device should say', 'aria-label': 'Text to say' });
    const interrupt = el('input', { name: 'interrupt', type: 'checkbox' });
    const sayResult = el('div', { class: 'call-result', 'aria-live': 'polite', dataset: { push: 'say' } });
    const reportSay = reporter(sayResult, gateway);
    const turnText = el('input', { name: 'text', required: true, placeholder: 'What the user might have said', 'aria-label': 'Text of the turn' });
    const turnResult = el('div', { class: 'call-result', 'aria-live': 'polite', dataset: { push: 'turn' } });
    const reportTurn = reporter(turnResult, gateway);

    const say = (/** @type {SubmitEvent} */ event) => {
      event.preventDefault();
      void reportSay(async () =>
        receipt(await request(this.gateway(), 'POST', devicePath(this.id, 'say'), { text: sayText.value, interrupt: interrupt.checked })),
      );
    };
    const turn = (/** @type {SubmitEvent} */ event) => {
      event.preventDefault();
      void reportTurn(async () => receipt(await request(this.gateway(), 'POST', devicePath(this.id, 'turns'), { text: turnText.value })));
    };

    this.card = el(
      'li',
      { class: 'card fleet-device', dataset: { device: device.id } },
      el('div', { class: 'row' }, el('h2', { class: 'device-id', text: device.id }), this.instance, this.since),
      el('h3', { text: 'Tools' }),
      this.noTools,
      this.toolList,
      el('h3', { text: 'Say something' }),
      el(
        'form',
        { class: 'push say', onsubmit: say },
        el('div', { class: 'row' }, sayText, el('button', { type: 'submit', text: 'Say' })),
        el('label', { class: 'check' }, interrupt, 'Interrupt what it is saying or answering'),
      ),
      sayResult,
      el('h3', { text: 'Start a turn' }),
      el('p', { class: 'hint', text: 'The model answers as if the user had said this; the device speaks the answer.' }),
      el('form', { class: 'push turn', onsubmit: turn }, el('div', { class: 'row' }, turnText, el('button', { type: 'submit', text: 'Start' }))),
      turnResult,
    );
    this.update(device);
  }

  /** @param {Device} device */
  update(device) {
    this.instance.textContent = device.instance;
    const since = new Date(device.connected_at);
    this.since.textContent = Number.isNaN(since.getTime()) ? '' : `online since ${since.toLocaleString()}`;
    const tools = Array.isArray(device.tools) ? device.tools : [];
    /** @type {Map<string, {json: string, item: HTMLElement}>} */
    const next = new Map();
    for (const tool of tools) {
      const json = JSON.stringify(tool);
      const known = this.tools.get(tool.name);
      next.set(tool.name, known?.json === json ? known : { json, item: toolItem(this.id, tool, this.gateway) });
    }
    const items = [...next.values()].map(({ item }) => item);
    // Moving a node out of the page and back would take the focus from a field being typed in.
    if (items.length !== this.toolList.children.length || items.some((item, index) => this.toolList.children[index] !== item))
      this.toolList.replaceChildren(...items);
    this.tools = next;
    this.noTools.hidden = items.length > 0;
  }
}

/**
 * The devices view: the devices online that this token may reach (`GET /devices`), read again
 * every {@link REFRESH_MS} while the view is on screen and never while it is not (nor while the
 * browser tab is hidden), each with its tools, a form to call them, and forms to make it say
 * something or start a turn.
 * @param {() => Gateway} gateway where the devices are read and pushed to, with which token
 */
export function setupDevices(gateway) {
  const list = $('#devices');
  const problem = $('#devices-problem');
  const empty = $('#devices-empty');
  const updated = $('#devices-updated');
  /** @type {Map<string, DeviceCard>} */
  let cards = new Map();
  let shown = false;
  /** @type {ReturnType<typeof setInterval> | undefined} */
  let timer;
  /** @type {Promise<void> | undefined} */
  let reading;

  /** @param {Device[]} devices */
  const render = (devices) => {
    /** @type {Map<string, DeviceCard>} */
    const next = new Map();
    for (const device of devices) {
      const card = cards.get(device.id);
      if (card) card.update(device);
      next.set(device.id, card ?? new DeviceCard(device, gateway));
    }
    const items = [...next.values()].map((card) => card.card);
    if (items.length !== list.children.length || items.some((item, index) => list.children[index] !== item)) list.replaceChildren(...items);
    cards = next;
    empty.hidden = devices.length > 0;
  };

  const read = async () => {
    const target = gateway();
    try {
      const answer = await request(target, 'GET', '/devices');
      if (!answer.ok) {
        const { headline, meaning } = describeRefusal(answer);
        throw new Error(`${headline}. ${meaning}`.trim());
      }
      if (!Array.isArray(answer.body?.devices)) throw new Error('the answer has no list of devices');
      problem.hidden = true;
      render(answer.body.devices);
      updated.textContent = `${answer.body.devices.length} online, read at ${clock(new Date())}${shown ? `; read again every ${REFRESH_MS / 1000} s while this view is open` : ''}`;
    } catch (error) {
      // The list stays as last read (the time above says when), so what the reader typed stays too.
      problem.textContent = `Could not read the devices at ${target.origin}/devices: ${/** @type {Error} */ (error).message}`;
      problem.hidden = false;
    }
  };

  /** Reads the list; a read already under way is joined rather than doubled. */
  const load = () => (reading ??= read().finally(() => (reading = undefined)));

  const schedule = () => {
    clearInterval(timer);
    timer = undefined;
    if (!shown || document.hidden) return;
    void load();
    timer = setInterval(() => void load(), REFRESH_MS);
  };

  document.addEventListener('visibilitychange', schedule);
  $('#devices-refresh').addEventListener('click', () => void load());

  // Activation (XIAOZHI_ACTIVATION=required): the code a new device speaks binds it to this token's owner.
  const code = /** @type {HTMLInputElement} */ ($('#activation-code'));
  const reportActivation = reporter($('#activation-result'), gateway);
  $('#device-activate').addEventListener('submit', (/** @type {SubmitEvent} */ event) => {
    event.preventDefault();
    void reportActivation(async () => {
      const answer = await request(gateway(), 'POST', '/devices/activate', { code: code.value.trim() });
      if (!answer.ok) return refusal(answer);
      code.value = '';
      void load();
      return { ok: true, headline: `Device ${answer.body?.device} is yours: it gets its own credential at its next configuration request` };
    });
  });

  return {
    load,
    /** Starts or stops the reading, as the view comes on screen or leaves it. @param {boolean} visible */
    setShown(visible) {
      if (visible === shown) return;
      shown = visible;
      schedule();
    },
    /** The connection changed (this page may have become a device, or stopped being one): reads again if on screen. */
    changed() {
      if (shown && !document.hidden) void load();
    },
  };
}
