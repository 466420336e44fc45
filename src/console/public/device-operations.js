import { el } from './dom.js';
import { devicePath, refusal, reporter, request } from './fleet-requests.js';

/**
 * @typedef {import('./catalogue.js').Gateway} Gateway
 * @typedef {import('./fleet-requests.js').Outcome} Outcome
 * @typedef {{board?: string, firmware_version?: string, rollout?: {firmware?: {rollout: string, firmware_id: string, version: string, offered: boolean}, endpoint?: {rollout: string, websocket_url?: string, mqtt_endpoint?: string}}}} FirmwareView
 */

/** What a budget counts (src/core/budgets/budget-meters.ts), in words, with the unit of its limits. */
const METERS = {
  llm_tokens: 'LLM tokens',
  tts_chars: 'Characters synthesized',
  stt_seconds: 'Seconds of audio recognized',
};
const PERIODS = ['day', 'month'];

/**
 * What a device runs and what rollouts offer it, in words (from `GET /devices`).
 * @param {FirmwareView} device
 */
export function firmwareText(device) {
  const running = device.firmware_version
    ? `Firmware ${device.firmware_version}${device.board ? ` on ${device.board}` : ''}`
    : 'It did not say its firmware (no User-Agent)';
  const offer = device.rollout?.firmware;
  const offered = offer
    ? `; rollout ${offer.rollout} ${offer.offered ? 'offers it' : 'does not offer it (it runs that or newer, or its board does not match)'} ${offer.version} (${offer.firmware_id})`
    : '';
  const endpoint = device.rollout?.endpoint;
  const moved = endpoint ? `; rollout ${endpoint.rollout} moves it to ${endpoint.websocket_url ?? endpoint.mqtt_endpoint}` : '';
  return `${running}${offered}${moved}.`;
}

/**
 * A device's budget, for its owner: usage against limits per meter and UTC period
 * (`GET /devices/<id>/usage`), and a form setting the owner's limits (`PUT /devices/<id>/budget`;
 * empty fields are no limit, all empty clears them). Read when asked, not on every refresh: only
 * the owner may read it, and a list read every few seconds should not cost a budget read per card.
 * @param {string} deviceId @param {() => Gateway} gateway
 */
export function budgetSection(deviceId, gateway) {
  const table = el('table', { class: 'budget-usage', hidden: true });
  /** @type {Record<string, HTMLInputElement>} */
  const inputs = {};
  const fields = Object.entries(METERS).flatMap(([meter, label]) =>
    PERIODS.map((period) => {
      const name = `${meter}_per_${period}`;
      const input = /** @type {HTMLInputElement} */ (
        el('input', { name, type: 'number', min: 1, step: 1, placeholder: 'no limit', 'aria-label': `${label} per ${period}` })
      );
      inputs[name] = input;
      return el('label', {}, `${label} per ${period}`, input);
    }),
  );
  const result = el('div', { class: 'call-result', 'aria-live': 'polite', dataset: { result: 'budget' } });
  const report = reporter(result, gateway);

  /** @param {any} usage */
  const showUsage = (usage) => {
    const cell = (/** @type {any} */ meter) => (/** @type {string} */ period) => {
      const { used, limit } = meter?.[period] ?? {};
      return el('td', { text: limit === null || limit === undefined ? `${used ?? 0} (no limit)` : `${used} of ${limit}` });
    };
    table.replaceChildren(
      el('tr', {}, el('th', { text: '' }), ...PERIODS.map((period) => el('th', { text: `this ${period} (UTC)` }))),
      ...Object.entries(METERS).map(([meter, label]) => el('tr', { dataset: { meter } }, el('th', { text: label }), ...PERIODS.map(cell(usage?.[meter])))),
    );
    table.hidden = false;
  };

  /** Usage and the owner's limits, into the table and the form. @returns {Promise<Outcome>} */
  const read = async () => {
    const [usage, budget] = await Promise.all([
      request(gateway(), 'GET', devicePath(deviceId, 'usage')),
      request(gateway(), 'GET', devicePath(deviceId, 'budget')),
    ]);
    if (!usage.ok) return refusal(usage);
    if (!budget.ok) return refusal(budget);
    showUsage(usage.body?.usage);
    for (const [name, input] of Object.entries(inputs)) input.value = budget.body?.budget?.[name] === undefined ? '' : String(budget.body.budget[name]);
    return { ok: true, headline: 'Usage read: limits are the stricter of yours (below) and the tokens file’s' };
  };

  /** @param {Record<string, number>} limits @returns {Promise<Outcome>} */
  const save = async (limits) => {
    const answer = await request(gateway(), 'PUT', devicePath(deviceId, 'budget'), limits);
    if (!answer.ok) return refusal(answer);
    const set = Object.keys(answer.body?.budget ?? {});
    const usage = await request(gateway(), 'GET', devicePath(deviceId, 'usage'));
    if (usage.ok) showUsage(usage.body?.usage);
    return { ok: true, headline: set.length > 0 ? `Limits set: ${set.join(', ')}` : 'Your limits are cleared: only the tokens file’s apply' };
  };

  const submit = (/** @type {SubmitEvent} */ event) => {
    event.preventDefault();
    void report(async () => {
      /** @type {Record<string, number>} */
      const limits = {};
      for (const [name, input] of Object.entries(inputs)) {
        if (input.value.trim() === '') continue;
        const value = Number(input.value);
        // The gateway checks it too; a field the browser let through as text is sent as it is, and refused there.
        limits[name] = Number.isFinite(value) ? value : /** @type {any} */ (input.value);
      }
      return save(limits);
    });
  };
  const clear = () => void report(() => save({}));

  return el(
    'details',
    { class: 'budget', dataset: { section: 'budget' } },
    el('summary', { text: 'Budget' }),
    el('div', { class: 'row' }, el('button', { type: 'button', class: 'read-usage', text: 'Read usage', onclick: () => void report(read) })),
    table,
    el(
      'form',
      { class: 'budget-limits', onsubmit: submit, novalidate: true },
      el('div', { class: 'fields' }, fields),
      el(
        'div',
        { class: 'row' },
        el('button', { type: 'submit', text: 'Set limits' }),
        el('button', { type: 'button', class: 'clear', text: 'Clear my limits', onclick: clear }),
      ),
    ),
    result,
  );
}

/** The credential actions (src/fleet/activation/activation.controller.ts), what each does, and how its answer reads. */
const CREDENTIAL_ACTIONS = [
  {
    name: 'rotate',
    label: 'Rotate secret',
    confirm: 'Really rotate? Its next configuration request gets a new secret',
    path: ['credential', 'rotate'],
    done: 'Rotated: the device gets its new secret at its next configuration request; the old one stops working then',
  },
  {
    name: 'revoke',
    label: 'Revoke secret',
    confirm: 'Really revoke? It is disconnected everywhere until it is bound again',
    path: ['credential', 'revoke'],
    done: 'Revoked: its secret is gone and its connections are closed on every replica',
  },
  {
    name: 'unbind',
    label: 'Unbind',
    confirm: 'Really unbind? It is no longer yours, and must be activated again',
    path: ['unbind'],
    done: 'Unbound: its secret is gone, and its id is free once it is offline',
  },
];

/**
 * A bound device's credential, for its owner (`XIAOZHI_ACTIVATION=required`): rotate, revoke,
 * unbind. Each asks once more in place (a second button) before it is sent, so a stray click
 * does nothing.
 * @param {string} deviceId @param {() => Gateway} gateway
 * @param {(notice: string) => void} changed the list should be read again, and `notice` shown above it (the card may leave the list)
 */
export function credentialSection(deviceId, gateway, changed) {
  const result = el('div', { class: 'call-result', 'aria-live': 'polite', dataset: { result: 'credential' } });
  const report = reporter(result, gateway);
  const confirmRow = el('div', { class: 'row confirm', hidden: true });

  const buttons = CREDENTIAL_ACTIONS.map((action) =>
    el('button', {
      type: 'button',
      class: 'ask',
      dataset: { action: action.name },
      text: action.label,
      onclick: () => {
        confirmRow.replaceChildren(
          el('button', {
            type: 'button',
            class: 'really',
            dataset: { action: action.name },
            text: action.confirm,
            onclick: () => {
              confirmRow.hidden = true;
              void report(async () => {
                const answer = await request(gateway(), 'POST', devicePath(deviceId, ...action.path));
                if (!answer.ok) return refusal(answer);
                changed(`Device ${deviceId}: ${action.done}`);
                return { ok: true, headline: action.done };
              });
            },
          }),
          el('button', { type: 'button', class: 'cancel', text: 'Cancel', onclick: () => (confirmRow.hidden = true) }),
        );
        confirmRow.hidden = false;
      },
    }),
  );

  return el(
    'details',
    { class: 'credential', dataset: { section: 'credential' } },
    el('summary', { text: 'Credential' }),
    el('p', { class: 'hint', text: 'For a device bound to you by its activation code, with a secret of its own.' }),
    el('div', { class: 'row' }, buttons),
    confirmRow,
    result,
  );
}
