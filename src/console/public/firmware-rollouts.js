import { $, el } from './dom.js';
import { refusal, refusedHere, reporter, request } from './fleet-requests.js';

/**
 * @typedef {import('./catalogue.js').Gateway} Gateway
 * @typedef {import('./fleet-requests.js').Outcome} Outcome
 * @typedef {{id: string, version: string, url: string, boards: string[], notes?: string}} FirmwareEntry
 * @typedef {{id: string, firmware_id?: string, force?: boolean, endpoint?: {websocket_url?: string, mqtt_endpoint?: string}, group: {devices?: string[], globs?: string[], percent?: number}, state: string}} Rollout
 */

/** A rollout's group, in words. @param {Rollout['group']} group */
function groupText(group) {
  if (group.devices) return `devices ${group.devices.join(', ')}`;
  if (group.globs) return `ids matching ${group.globs.join(', ')}`;
  return `${group.percent} % of your devices`;
}

/** A comma-separated field as a list, empty parts dropped. @param {string} text */
const listOf = (text) =>
  text
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '');

/**
 * The firmware section of the Devices view: this token's principal's firmware builds
 * (`/fleet/firmware`) and rollouts (`/fleet/rollouts`), read when the section is opened and after
 * each change, a form for each, and per rollout: widen, pause, resume, stop. The gateway checks
 * every field; what it refuses is shown with its code.
 * @param {() => Gateway} gateway
 */
export function setupFirmwareRollouts(gateway) {
  const section = /** @type {HTMLDetailsElement} */ ($('#fleet-firmware'));
  const firmwareList = $('#firmware-list');
  const rolloutList = $('#rollout-list');
  const listed = $('#rollouts-updated');
  const reportFirmware = reporter($('#firmware-result'), gateway);
  const reportRollout = reporter($('#rollout-result'), gateway);

  const read = async () => {
    const [firmware, rollouts] = await Promise.all([request(gateway(), 'GET', '/fleet/firmware'), request(gateway(), 'GET', '/fleet/rollouts')]);
    if (!firmware.ok || !rollouts.ok) {
      listed.textContent = refusal(firmware.ok ? rollouts : firmware).headline;
      return;
    }
    /** @type {FirmwareEntry[]} */
    const builds = firmware.body?.firmware ?? [];
    firmwareList.replaceChildren(
      ...builds.map((entry) =>
        el(
          'li',
          { dataset: { firmware: entry.id } },
          el('strong', { text: entry.id }),
          ` ${entry.version} for ${entry.boards.join(', ')}: `,
          el('code', { text: entry.url }),
        ),
      ),
    );
    /** @type {Rollout[]} */
    const all = rollouts.body?.rollouts ?? [];
    rolloutList.replaceChildren(...all.map(rolloutItem));
    listed.textContent = `${builds.length} builds, ${all.length} rollouts`;
  };
  const reread = () => void read().catch((/** @type {Error} */ error) => (listed.textContent = `Could not read them: ${error.message}`));

  /** One change to a rollout, then the lists again. @param {string} path @param {unknown} [body] @param {string} [done] */
  const change = (path, body, done = 'Done') =>
    void reportRollout(async () => {
      const answer = await request(gateway(), 'POST', path, body);
      if (!answer.ok) return refusal(answer);
      reread();
      return { ok: true, headline: `${done}: rollout ${answer.body?.id} is ${answer.body?.state}` };
    });

  /** @param {Rollout} rollout */
  function rolloutItem(rollout) {
    const path = (/** @type {string} */ action) => `/fleet/rollouts/${encodeURIComponent(rollout.id)}/${action}`;
    const offers = [
      rollout.firmware_id && `firmware ${rollout.firmware_id}${rollout.force ? ' (forced)' : ''}`,
      rollout.endpoint && `endpoint ${rollout.endpoint.websocket_url ?? rollout.endpoint.mqtt_endpoint}`,
    ]
      .filter(Boolean)
      .join(' and ');
    const percent = /** @type {HTMLInputElement} */ (
      el('input', { type: 'number', min: 0, max: 100, step: 'any', 'aria-label': `New percent of ${rollout.id}` })
    );
    const live = rollout.state !== 'stopped';
    return el(
      'li',
      { dataset: { rollout: rollout.id, state: rollout.state } },
      el('strong', { text: rollout.id }),
      el('span', { class: 'badge rollout-state', text: rollout.state }),
      ` ${offers} to ${groupText(rollout.group)}`,
      el(
        'div',
        { class: 'row' },
        rollout.state === 'active' &&
          el('button', { type: 'button', dataset: { action: 'pause' }, text: 'Pause', onclick: () => change(path('pause'), undefined, 'Paused') }),
        rollout.state === 'paused' &&
          el('button', { type: 'button', dataset: { action: 'resume' }, text: 'Resume', onclick: () => change(path('resume'), undefined, 'Resumed') }),
        live && el('button', { type: 'button', dataset: { action: 'stop' }, text: 'Stop', onclick: () => change(path('stop'), undefined, 'Stopped for good') }),
        live &&
          rollout.group.percent !== undefined &&
          el(
            'form',
            {
              class: 'row widen',
              onsubmit: (/** @type {SubmitEvent} */ event) => {
                event.preventDefault();
                change(path('widen'), { percent: Number(percent.value) }, 'Widened');
              },
            },
            percent,
            el('button', { type: 'submit', text: 'Widen' }),
          ),
      ),
    );
  }

  $('#firmware-add').addEventListener('submit', (/** @type {SubmitEvent} */ event) => {
    event.preventDefault();
    const form = /** @type {HTMLFormElement} */ (event.target);
    const field = (/** @type {string} */ name) => String(new FormData(form).get(name) ?? '').trim();
    void reportFirmware(async () => {
      const body = { ...(field('id') && { id: field('id') }), version: field('version'), url: field('url'), boards: listOf(field('boards')) };
      const answer = await request(gateway(), 'POST', '/fleet/firmware', body);
      if (!answer.ok) return refusal(answer);
      reread();
      return { ok: true, headline: `Firmware ${answer.body?.id} (${answer.body?.version}) added: a rollout may offer it now` };
    });
  });

  $('#rollout-create').addEventListener('submit', (/** @type {SubmitEvent} */ event) => {
    event.preventDefault();
    const form = /** @type {HTMLFormElement} */ (event.target);
    const field = (/** @type {string} */ name) => String(new FormData(form).get(name) ?? '').trim();
    void reportRollout(async () => {
      const kind = field('group');
      const value = field('members');
      if (value === '') return refusedHere('name the group: device ids, id globs, or a percent');
      const group = kind === 'percent' ? { percent: Number(value) } : { [kind]: listOf(value) };
      const body = {
        ...(field('id') && { id: field('id') }),
        ...(field('firmware_id') && { firmware_id: field('firmware_id') }),
        ...(field('websocket_url') && { endpoint: { websocket_url: field('websocket_url') } }),
        ...group,
      };
      const answer = await request(gateway(), 'POST', '/fleet/rollouts', body);
      if (!answer.ok) return refusal(answer);
      reread();
      return { ok: true, headline: `Rollout ${answer.body?.id} created (${answer.body?.state}): its devices get it at their next configuration request` };
    });
  });

  $('#rollouts-refresh').addEventListener('click', reread);
  section.addEventListener('toggle', () => section.open && reread());
}
