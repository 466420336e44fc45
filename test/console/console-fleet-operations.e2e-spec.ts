import type { Locator, Page } from 'playwright-core';
import { consoleInBrowser } from '../support/console-browser';
import { XiaozhiDevice } from '../support/xiaozhi/xiaozhi-device';

const OWNER = 'console-fleet-owner';
const STRANGER = 'console-fleet-stranger';

/** Resolves once `check` holds, checking every 50 ms; rejects after `timeoutMs`. */
async function eventually(check: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`Not within ${timeoutMs} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * The console's Devices view runs a fleet (issue 35) in headless Chromium: a bound xiaozhi
 * device's firmware and the rollouts that reach it, a push's receipt followed to `spoken`, the
 * owner's budget read and set, and the credential rotated, revoked and unbound, each refusal
 * shown with its code.
 */
describe('web console: fleet operations in a real browser', () => {
  const pages = consoleInBrowser({ AUTH_TOKENS: `${OWNER},${STRANGER}`, XIAOZHI_ACTIVATION: 'required' });
  const devices: XiaozhiDevice[] = [];

  afterEach(async () => {
    await Promise.all(devices.splice(0).map((device) => device.close()));
  });

  const ota = () => pages.stack.gateway.http('/xiaozhi/ota/');

  async function api(method: string, path: string, token = OWNER, body?: unknown): Promise<{ status: number; body: any }> {
    const response = await fetch(pages.stack.gateway.http(path), {
      method,
      headers: { Authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.status, body: await response.json().catch(() => null) };
  }

  /** A xiaozhi device bound to the owner by its code, connected with its own secret. */
  async function boundDevice(deviceId: string): Promise<XiaozhiDevice> {
    const device = new XiaozhiDevice({ deviceId });
    devices.push(device);
    const { code } = (await device.requestConfiguration(ota())).body.activation;
    expect(await api('POST', '/devices/activate', OWNER, { code })).toMatchObject({ status: 200, body: { device: deviceId, bound: true } });
    expect((await device.requestConfiguration(ota())).body.websocket.token).toMatch(/^dev_/);
    await device.connect();
    return device;
  }

  async function openDevices(): Promise<Page> {
    const page = await pages.newPage();
    await page.fill('#token', OWNER);
    await page.click('[data-tab="devices"]');
    return page;
  }

  const card = (page: Page, id: string) => page.locator(`.fleet-device[data-device="${id}"]`);

  /** The text of the first element of `locator` that contains `text`, once there is one. */
  async function shown(locator: Locator, text: string | RegExp): Promise<string> {
    const element = locator.filter({ hasText: text }).first();
    await element.waitFor({ timeout: 10_000 });
    return (await element.textContent()) ?? '';
  }

  it("shows a device's firmware, follows a push's receipt until spoken, and reads and sets its budget, showing what the gateway refuses", async () => {
    const device = await boundDevice('02:00:00:00:f0:01');
    const page = await openDevices();
    const kitchen = card(page, '02:00:00:00:f0:01');
    expect(await shown(kitchen.locator('.firmware'), 'Firmware 2.4.2 on bread-compact-wifi')).not.toContain('rollout');

    await kitchen.locator('form.say input[name="text"]').fill('Dinner is ready');
    await kitchen.locator('form.say button').click();
    const receipt = await shown(kitchen.locator('.receipt[data-state="spoken"]'), 'spoken: the device finished saying it');
    const pushId = /Receipt (push-[0-9a-f-]+)/.exec(receipt)?.[1];
    expect((await api('GET', `/pushes/${pushId}`)).body).toMatchObject({ state: 'spoken', device: '02:00:00:00:f0:01' });

    // A push to a device that left: refused, and its receipt says so.
    await kitchen.locator('form.turn input[name="text"]').fill('Are you there?');
    await device.close();
    await kitchen.locator('form.turn button').click();
    expect(await shown(kitchen.locator('.call-result[data-push="turn"] .failed'), 'DEVICE_OFFLINE (HTTP 404)')).toBeTruthy();
    await shown(kitchen.locator('.receipt[data-state="refused"]'), 'refused (DEVICE_OFFLINE)');

    const budget = kitchen.locator('[data-section="budget"]');
    await budget.locator('summary').click();
    await budget.locator('button.read-usage').click();
    await shown(budget.locator('.call-result .ok'), 'Usage read');
    expect(await budget.locator('tr[data-meter="tts_chars"]').textContent()).toContain('(no limit)');

    await budget.locator('input[name="tts_chars_per_day"]').fill('-5');
    await budget.locator('form button[type="submit"]').click();
    await shown(budget.locator('.call-result .failed'), /^INVALID_MESSAGE \(HTTP 400\): Invalid budget/);
    expect((await api('GET', '/devices/02:00:00:00:f0:01/budget')).body.budget).toEqual({});

    await budget.locator('input[name="tts_chars_per_day"]').fill('500');
    await budget.locator('input[name="llm_tokens_per_month"]').fill('20000');
    await budget.locator('form button[type="submit"]').click();
    await shown(budget.locator('.call-result .ok'), 'Limits set: ');
    expect(await shown(budget.locator('tr[data-meter="tts_chars"]'), 'of 500')).toContain('0 of 500');
    expect((await api('GET', '/devices/02:00:00:00:f0:01/budget')).body.budget).toEqual({ tts_chars_per_day: 500, llm_tokens_per_month: 20000 });
    // Only the owner may see it.
    expect((await api('GET', '/devices/02:00:00:00:f0:01/budget', STRANGER)).status).toBe(404);

    await budget.locator('button.clear').click();
    await shown(budget.locator('.call-result .ok'), 'Your limits are cleared');
    expect((await api('GET', '/devices/02:00:00:00:f0:01/budget')).body.budget).toEqual({});
  }, 60_000);

  it('adds a firmware build, rolls it out to a share of the devices, widens, pauses, resumes and stops it, and shows what it refuses', async () => {
    await boundDevice('02:00:00:00:f0:02');
    const page = await openDevices();
    const device = card(page, '02:00:00:00:f0:02');
    await device.waitFor();
    const section = page.locator('#fleet-firmware');
    await section.locator('summary').click();
    await shown(section.locator('#rollouts-updated'), '0 builds, 0 rollouts');

    const addBuild = async (version: string) => {
      await section.locator('#firmware-add input[name="id"]').fill('bread-2.5.0');
      await section.locator('#firmware-add input[name="version"]').fill(version);
      await section.locator('#firmware-add input[name="url"]').fill('https://firmware.example/bread-2.5.0.bin');
      await section.locator('#firmware-add input[name="boards"]').fill('bread-*');
      await section.locator('#firmware-add button').click();
    };
    await addBuild('v2.5');
    await shown(section.locator('#firmware-result .failed'), /^INVALID_MESSAGE \(HTTP 400\)/);
    await addBuild('2.5.0');
    await shown(section.locator('#firmware-result .ok'), 'Firmware bread-2.5.0 (2.5.0) added');
    await shown(section.locator('#firmware-list li[data-firmware="bread-2.5.0"]'), '2.5.0 for bread-*');

    const form = section.locator('#rollout-create');
    await form.locator('input[name="id"]').fill('bread-wave');
    await form.locator('input[name="firmware_id"]').fill('bread-2.5.0');
    await form.locator('select[name="group"]').selectOption('percent');
    await form.locator('input[name="members"]').fill('0');
    await form.locator('button').click();
    await shown(section.locator('#rollout-result .ok'), 'Rollout bread-wave created (active)');
    const rollout = section.locator('#rollout-list li[data-rollout="bread-wave"]');
    await shown(rollout, 'firmware bread-2.5.0 to 0 % of your devices');

    // A share only widens: a narrower one is refused.
    await rollout.locator('form.widen input').fill('100');
    await rollout.locator('form.widen button').click();
    await shown(section.locator('#rollout-result .ok'), 'Widened: rollout bread-wave is active');
    await shown(section.locator('#rollout-list li[data-rollout="bread-wave"]'), '100 % of your devices');
    await section.locator('#rollout-list li[data-rollout="bread-wave"] form.widen input').fill('50');
    await section.locator('#rollout-list li[data-rollout="bread-wave"] form.widen button').click();
    await shown(section.locator('#rollout-result .failed'), /^INVALID_MESSAGE \(HTTP 400\)/);

    // The device's card says what the rollout offers it (the device list is read every 5 s).
    expect(await shown(device.locator('.firmware'), 'offers it 2.5.0')).toContain('rollout bread-wave offers it 2.5.0 (bread-2.5.0)');

    const act = async (action: string, state: string) => {
      await section.locator(`#rollout-list li[data-rollout="bread-wave"] button[data-action="${action}"]`).click();
      await section.locator(`#rollout-list li[data-rollout="bread-wave"][data-state="${state}"]`).waitFor({ timeout: 10_000 });
    };
    await act('pause', 'paused');
    expect((await api('GET', '/fleet/rollouts/bread-wave')).body.state).toBe('paused');
    await act('resume', 'active');
    await act('stop', 'stopped');
    expect(await section.locator('#rollout-list li[data-rollout="bread-wave"] button').count()).toBe(0);
    expect((await api('GET', '/fleet/rollouts/bread-wave')).body.state).toBe('stopped');
    // Another principal sees none of it.
    expect((await api('GET', '/fleet/rollouts', STRANGER)).body.rollouts).toEqual([]);
  }, 60_000);

  it("rotates, revokes and unbinds a bound device's credential from its card, each only once asked again", async () => {
    const first = await boundDevice('02:00:00:00:f0:03');
    const second = await boundDevice('02:00:00:00:f0:04');
    const page = await openDevices();
    const credential = (id: string) => card(page, id).locator('[data-section="credential"]');
    const sent: string[] = [];
    page.on('request', (request) => request.method() === 'POST' && sent.push(new URL(request.url()).pathname));

    await credential('02:00:00:00:f0:03').locator('summary').click();
    await credential('02:00:00:00:f0:03').locator('button.ask[data-action="rotate"]').click();
    await credential('02:00:00:00:f0:03').locator('button.cancel').click();
    expect(sent).toEqual([]);
    await credential('02:00:00:00:f0:03').locator('button.ask[data-action="rotate"]').click();
    await credential('02:00:00:00:f0:03').locator('button.really[data-action="rotate"]').click();
    await shown(credential('02:00:00:00:f0:03').locator('.call-result .ok'), 'Rotated: the device gets its new secret at its next configuration request');
    const old = first.configuration.websocket.token;
    const rotated = (await first.requestConfiguration(ota())).body.websocket.token;
    expect(rotated).toMatch(/^dev_/);
    expect(rotated).not.toBe(old);

    await credential('02:00:00:00:f0:03').locator('button.ask[data-action="revoke"]').click();
    await credential('02:00:00:00:f0:03').locator('button.really[data-action="revoke"]').click();
    // The card leaves the list with the device: what was done is said above the list.
    await shown(page.locator('#devices-notice'), 'Device 02:00:00:00:f0:03: Revoked: its secret is gone and its connections are closed on every replica');
    await eventually(() => !first.connected, 5000, 'the revoked device disconnected');
    // The list is read again: the revoked device is gone from it, the other stays.
    await card(page, '02:00:00:00:f0:03').waitFor({ state: 'detached', timeout: 10_000 });
    expect(second.connected).toBe(true);

    await credential('02:00:00:00:f0:04').locator('summary').click();
    await credential('02:00:00:00:f0:04').locator('button.ask[data-action="unbind"]').click();
    await credential('02:00:00:00:f0:04').locator('button.really[data-action="unbind"]').click();
    await shown(page.locator('#devices-notice'), 'Device 02:00:00:00:f0:04: Unbound');
    await eventually(() => !second.connected, 5000, 'the unbound device disconnected');
    expect((await api('POST', '/devices/02:00:00:00:f0:04/unbind')).status).toBe(404);
    expect(sent).toEqual([
      '/devices/02%3A00%3A00%3A00%3Af0%3A03/credential/rotate',
      '/devices/02%3A00%3A00%3A00%3Af0%3A03/credential/revoke',
      '/devices/02%3A00%3A00%3A00%3Af0%3A04/unbind',
    ]);
  }, 60_000);
});
