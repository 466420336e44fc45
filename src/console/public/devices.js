import { argumentsTemplate } from './catalogue.js';
import { $, clock, el, pretty } from './dom.js';
import { budgetSection, credentialSection, firmwareText } from './device-operations.js';
import { describeRefusal, devicePath, refusal, refusedHere, reporter, request } from './fleet-requests.js';
import { setupFirmwareRollouts } from './firmware-rollouts.js';
import { followReceipt } from './push-receipt.js';

/**
 * @typedef {import('./catalogue.js').Gateway} Gateway
 * @typedef {{name: string, agent_name: string, description: string, input_schema: unknown, visibility: string}} OfferedTool
 * @typedef {{id: string, instance: string, connected_at: string, tools: OfferedTool[]} & import('./device-operations.js').FirmwareView} Device
 * @typedef {import('./fleet-requests.js').Answer} Answer
 * @typedef {import('./fleet-requests.js').Outcome} Outcome
 */

/** How often the list is read again while the view is on screen. */
export const REFRESH_MS = 5000;

/** Who may call a tool, by its `visibility`. */
const VISIBILITY = {
  both: 'The model and agents may call it',
  agents: 'Agents only (MCP, UTCP, LiteMCP, this page); never the model',
  model: "The device's own model only",
};

/** What a push's answer says happened to it (`delivered`); its receipt follows what happens next. */
const DELIVERY = {
  spoken: 'Taken to the device',
  queued: 'Queued behind the turn in flight',
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
 * What a push's answer says, in words; its receipt is then followed in `receiptLine` by
 * `follow` (a refused push has one too: its error names it).
 * @param {Answer} answer @param {(pushId: string) => void} follow @returns {Outcome}
 */
function pushed(answer, follow) {
  const pushId = answer.body?.push_id ?? answer.body?.error?.push_id;
  if (typeof pushId === 'string') follow(pushId);
  if (!answer.ok) return refusal(answer);
  const { delivered, turn_id: turnId } = answer.body ?? {};
  return { ok: true, headline: `${DELIVERY[/** @type {keyof typeof DELIVERY} */ (delivered)] ?? delivered} (HTTP ${answer.status}, push ${turnId})` };
}

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
 * One online device: its firmware, what it offers agents, forms to call its tools, make it say
 * something (following the push's receipt) and start a turn on it, and, for its owner, its
 * budget and credential. Refreshing the list updates the card in place, so what the reader
 * opened and typed stays.
 */
class DeviceCard {
  /** @param {Device} device @param {() => Gateway} gateway @param {(notice: string) => void} changed the list should be read again, with a notice above it */
  constructor(device, gateway, changed) {
    this.id = device.id;
    this.gateway = gateway;
    /** Stops following the receipt of the last push made from this card. @type {() => void} */
    this.unfollow = () => undefined;
    this.firmware = el('p', { class: 'firmware hint' });
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
    const receiptLine = el('output', { class: 'receipt hint', 'aria-live': 'polite' });
    /** @param {string} pushId */
    const follow = (pushId) => {
      this.unfollow();
      this.unfollow = followReceipt(this.gateway, pushId, receiptLine);
    };

    const say = (/** @type {SubmitEvent} */ event) => {
      event.preventDefault();
      void reportSay(async () =>
        pushed(await request(this.gateway(), 'POST', devicePath(this.id, 'say'), { text: sayText.value, interrupt: interrupt.checked }), follow),
      );
    };
    const turn = (/** @type {SubmitEvent} */ event) => {
      event.preventDefault();
      void reportTurn(async () => pushed(await request(this.gateway(), 'POST', devicePath(this.id, 'turns'), { text: turnText.value }), follow));
    };

    this.card = el(
      'li',
      { class: 'card fleet-device', dataset: { device: device.id } },
      el('div', { class: 'row' }, el('h2', { class: 'device-id', text: device.id }), this.instance, this.since),
      this.firmware,
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
      receiptLine,
      budgetSection(device.id, gateway),
      credentialSection(device.id, gateway, changed),
    );
    this.update(device);
  }

  /** The card left the list: nothing of it runs on. */
  dispose() {
    this.unfollow();
  }

  /** @param {Device} device */
  update(device) {
    this.instance.textContent = device.instance;
    this.firmware.textContent = firmwareText(device);
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
 * browser tab is hidden), each with its firmware and tools, a form to call them, forms to make it
 * say something or start a turn, and its owner's budget and credential; then the firmware builds
 * and rollouts of this token's principal.
 * @param {() => Gateway} gateway where the devices are read and pushed to, with which token
 */
export function setupDevices(gateway) {
  const list = $('#devices');
  const problem = $('#devices-problem');
  const empty = $('#devices-empty');
  const updated = $('#devices-updated');
  const notice = $('#devices-notice');
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
      next.set(device.id, card ?? new DeviceCard(device, gateway, changed));
    }
    for (const [id, card] of cards) if (!next.has(id)) card.dispose();
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

  /** What a card changed, said above the list (the card itself may leave it), then the list read again. @param {string} text */
  const changed = (text) => {
    notice.textContent = text;
    notice.hidden = false;
    void load();
  };

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

  setupFirmwareRollouts(gateway);

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
