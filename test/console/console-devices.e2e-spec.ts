import { join } from 'path';
import type { Page, Request } from 'playwright-core';
import { WebSocket } from 'ws';
import { ARTIFACTS_DIR } from '../support/browser';
import { consoleInBrowser, PHONE } from '../support/console-browser';
import type { LlmClient } from '../support/llm-stack';

const TOKEN = 'console-token';
const STRANGER = 'stranger-token';

const LIGHT = {
  name: 'light_on',
  description: 'Turns the light on in a room',
  parameters: { type: 'object', properties: { room: { type: 'string', examples: ['kitchen'] } }, required: ['room'] },
};
const REBOOT = { name: 'reboot', description: 'Restarts the device', parameters: { type: 'object' }, visibility: 'agents' };
const VOLUME = { name: 'volume', description: 'Sets the volume', parameters: { type: 'object' }, visibility: 'model' };

/** Device-provided text that would run if the page ever parsed it as HTML. */
const XSS = `<img src=x onerror="globalThis.__xss = 'img'"><script>globalThis.__xss = 'script'</script>`;

/** A word no narrow screen has room for. */
const LONG_WORD = 'W'.repeat(120);

/** Resolves once `condition` holds, checking every 50 ms; rejects after `timeoutMs`. */
async function until(condition: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`The condition did not hold within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The console's Devices view in headless Chromium, against devices that are `ws` clients of the test. */
describe('web console: Devices view in a real browser', () => {
  const pages = consoleInBrowser({ AUTH_TOKENS: `${TOKEN},${STRANGER}`, CLIENT_TOOL_TIMEOUT: 2 });
  const sockets: LlmClient[] = [];

  afterEach(async () => {
    await Promise.all(sockets.splice(0).map((socket) => socket.close()));
  });

  /** A device connected as `id` with `token`, its tools registered. */
  async function device(id: string, tools: unknown[], token = TOKEN): Promise<LlmClient> {
    const socket = await pages.stack.connect('/', { Authorization: `Bearer ${token}`, 'Device-Id': id });
    sockets.push(socket);
    socket.send({ type: 'register_tools', tools });
    expect(await socket.next()).toMatchObject({ type: 'tools_registered', count: tools.length });
    return socket;
  }

  /** A console page with `token` entered, not connected, showing the Devices view. */
  async function openDevices(token = TOKEN): Promise<Page> {
    const page = await pages.newPage();
    await page.fill('#token', token);
    await page.click('[data-tab="devices"]');
    return page;
  }

  /** Waits for an element of `selector` that contains `text`; returns its text. */
  async function shown(page: Page, selector: string, text: string | RegExp): Promise<string> {
    const element = page.locator(selector, { hasText: text }).last();
    await element.waitFor({ timeout: 10_000 });
    return (await element.textContent()) ?? '';
  }

  const card = (page: Page, id: string) => page.locator(`.fleet-device[data-device="${id}"]`);

  it('lists a device and what it offers agents, calls its tools, and makes it speak', async () => {
    const speaker = await device('AA:BB:CC:DD:EE:01', [LIGHT, REBOOT, VOLUME]);
    const page = await openDevices();
    const kitchen = card(page, 'AA:BB:CC:DD:EE:01');
    await kitchen.waitFor();
    expect(await kitchen.locator('.device-id').textContent()).toBe('AA:BB:CC:DD:EE:01');
    expect(await shown(page, '#devices-updated', /1 online, read at/)).toContain('read again every 5 s');
    // The model-only tool stays with the device's model: agents, and so this list, never see it.
    const tools = await kitchen
      .locator('.fleet-tool')
      .evaluateAll((items: any[]) =>
        items.map((item) => [item.dataset.tool, item.querySelector('.badge').textContent, item.querySelector('.agent-name').textContent]),
      );
    expect(tools).toEqual([
      ['light_on', 'both', 'AA.BB.CC.DD.EE.01__light_on'],
      ['reboot', 'agents', 'AA.BB.CC.DD.EE.01__reboot'],
    ]);
    const light = kitchen.locator('.fleet-tool[data-tool="light_on"]');
    expect(await light.locator('.description').textContent()).toBe('Turns the light on in a room');

    // A tool call: the device answers the tool_callback, the page shows the result.
    await light.locator('summary').click();
    expect(JSON.parse(await light.locator('textarea').inputValue())).toEqual({ room: 'kitchen' });
    await light.locator('textarea').fill('{"room": "hall"}');
    await light.locator('button[type="submit"]').click();
    const callback = await speaker.next();
    expect(callback).toMatchObject({ type: 'tool_callback', tool_name: 'light_on', arguments: { room: 'hall' } });
    speaker.send({ type: 'tool_result', call_id: callback.call_id, success: true, result: { on: true, room: 'hall' } });
    expect(await shown(page, '.fleet-tool[data-tool="light_on"] .call-result[data-ok="true"]', /HTTP 200, succeeded in \d+ ms/)).toContain('"room": "hall"');

    // Arguments that are not a JSON object never leave the page; those against the schema are refused by the gateway.
    await light.locator('textarea').fill('["hall"]');
    await light.locator('button[type="submit"]').click();
    expect(await shown(page, '.fleet-tool[data-tool="light_on"] .call-result[data-ok="false"]', 'INVALID_INPUT')).toContain(
      'the arguments must be a JSON object',
    );
    await light.locator('textarea').fill('{"room": ');
    await light.locator('button[type="submit"]').click();
    await shown(page, '.fleet-tool[data-tool="light_on"] .call-result[data-ok="false"]', 'INVALID_INPUT: the arguments are not JSON');
    await light.locator('textarea').fill('{"room": 7}');
    await light.locator('button[type="submit"]').click();
    expect(await shown(page, '.fleet-tool[data-tool="light_on"] .call-result[data-ok="false"]', 'INVALID_TOOL_PARAMETERS (HTTP 400)')).toContain(
      "The arguments break the tool's input schema",
    );
    await speaker.expectSilence(200);

    // The device fails: its own message, with the code.
    await light.locator('textarea').fill('{"room": "attic"}');
    await light.locator('button[type="submit"]').click();
    const failing = await speaker.next();
    speaker.send({ type: 'tool_result', call_id: failing.call_id, success: false, error: 'No light in the attic' });
    expect(await shown(page, '.fleet-tool[data-tool="light_on"] .call-result[data-ok="false"]', 'TOOL_EXECUTION_FAILED')).toContain('No light in the attic');

    // Say something: pushed to the device as an answer nobody asked for.
    const sent: Request[] = [];
    page.on('request', (request) => sent.push(request));
    await kitchen.locator('form.say input[name="text"]').fill('Dinner is ready');
    await kitchen.locator('form.say input[name="interrupt"]').check();
    await kitchen.locator('form.say button').click();
    const pushed = await speaker.until('llm_response');
    expect(pushed.at(-1)).toMatchObject({ type: 'llm_response', origin: 'push', content: 'Dinner is ready', is_final: true });
    expect(await speaker.next()).toMatchObject({ type: 'status', status: 'idle', origin: 'push' });
    const receipt = await shown(page, '.fleet-device .call-result[data-push="say"][data-ok="true"]', 'Taken to the device');
    expect(receipt).toMatch(new RegExp(`\\(HTTP 200, push ${pushed.at(-1).turn_id}\\)`));
    // Its receipt, followed until final: an LLM-gateway device's pushed sentence is spoken with its final llm_response.
    expect(await shown(page, `.fleet-device .receipt[data-state="spoken"]`, pushed.at(-1).turn_id)).toContain('spoken: the device finished saying it');
    const say = sent.find((request) => request.url().endsWith('/devices/AA%3ABB%3ACC%3ADD%3AEE%3A01/say'))!;
    expect(say.postDataJSON()).toEqual({ text: 'Dinner is ready', interrupt: true });
    expect(say.headers().authorization).toBe(`Bearer ${TOKEN}`);

    // Start a turn: the model answers as if the user had said it, and the device hears the answer.
    await kitchen.locator('form.turn input[name="text"]').fill('What is on the shopping list?');
    await kitchen.locator('form.turn button').click();
    const turn = await speaker.until('status', 'idle');
    expect(turn.find((frame) => frame.type === 'llm_response')).toMatchObject({ origin: 'push', content: 'You said: What is on the shopping list?' });
    await shown(page, '.fleet-device .call-result[data-push="turn"][data-ok="true"]', 'Taken to the device');
    expect(pages.stack.llm.requests.at(-1)!.messages.at(-1)).toMatchObject({ role: 'user', content: 'What is on the shopping list?' });
    await light.locator('summary').click();
    await page.evaluate(() => (globalThis as any).scrollTo(0, 0));
    await page.screenshot({ path: join(ARTIFACTS_DIR, 'console-devices.png') });

    // The device leaves: a push to it is refused with its code, and the next read drops it from the list.
    await speaker.close();
    await kitchen.locator('form.say input[name="interrupt"]').uncheck();
    await kitchen.locator('form.say button').click();
    expect(await shown(page, '.fleet-device .call-result[data-push="say"][data-ok="false"]', 'DEVICE_OFFLINE (HTTP 404)')).toContain(
      'The device is not connected, or this token may not reach it',
    );
    await page.click('#devices-refresh');
    await page.waitForSelector('#devices-empty:not([hidden])');
    expect(await page.locator('.fleet-device').count()).toBe(0);
  });

  it("shows only the devices the token may reach, and a refused token's error with its code", async () => {
    await device('stranger-speaker', [LIGHT], STRANGER);
    const page = await openDevices();
    await shown(page, '#devices-updated', /read at/);
    expect(await page.locator('.fleet-device[data-device="stranger-speaker"]').count()).toBe(0);

    await page.fill('#token', 'wrong-token');
    await page.click('#devices-refresh');
    expect(await shown(page, '#devices-problem', 'FORBIDDEN (HTTP 403)')).toContain('Could not read the devices at');
  });

  it('shows what a device says about itself as text, never as markup', async () => {
    await device('evil-1', [
      {
        name: 'innocent',
        description: `${XSS} ${LONG_WORD}`,
        parameters: { type: 'object', properties: { note: { type: 'string', description: XSS, default: XSS } } },
      },
    ]);
    const page = await openDevices();
    const tool = card(page, 'evil-1').locator('.fleet-tool[data-tool="innocent"]');
    await tool.waitFor();
    await tool.locator('summary').click();
    expect(await tool.locator('.description').textContent()).toBe(`${XSS} ${LONG_WORD}`);
    expect(await tool.locator('pre').first().textContent()).toContain('onerror=\\"globalThis.__xss');
    expect(JSON.parse(await tool.locator('textarea').inputValue())).toEqual({ note: XSS });
    expect(await page.locator('#view-devices img, #view-devices script').count()).toBe(0);
    expect(await page.evaluate(() => (globalThis as any).__xss)).toBeUndefined();

    // Long words from a device wrap rather than widen the page past a phone's screen.
    await page.setViewportSize(PHONE);
    const overflow = await page.evaluate(() => {
      const { scrollWidth, clientWidth } = (globalThis as any).document.documentElement;
      return scrollWidth - clientWidth;
    });
    expect(overflow).toBe(0);
    await page.screenshot({ path: join(ARTIFACTS_DIR, 'console-devices-phone.png') });
  });

  it('reads the list again every 5 s while the view is open, and stops when another view is shown', async () => {
    const page = await openDevices();
    const reads: number[] = [];
    page.on('request', (request) => {
      if (new URL(request.url()).pathname === '/devices') reads.push(Date.now());
    });
    await page.waitForSelector('#devices-empty:not([hidden])');
    await device('late-1', [LIGHT]);
    // No click: the next automatic read finds it.
    await card(page, 'late-1').waitFor({ timeout: 8_000 });

    // A card being typed in survives the reads that follow.
    const sayText = card(page, 'late-1').locator('form.say input[name="text"]');
    await sayText.fill('half typed');
    const before = reads.length;
    await until(() => reads.length > before, 8_000);
    expect(await sayText.inputValue()).toBe('half typed');

    await page.click('[data-tab="chat"]');
    const hiddenAt = reads.length;
    await new Promise((resolve) => setTimeout(resolve, 6_000));
    expect(reads.length).toBe(hiddenAt);

    await page.click('[data-tab="devices"]');
    await until(() => reads.length > hiddenAt, 2_000);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(reads.length).toBe(hiddenAt + 1);
  }, 40_000);

  it('makes the console itself a device: listed, its tools called from the list, pushes shown in its chat', async () => {
    const page = await pages.newPage();
    await page.fill('#token', TOKEN);
    await page.fill('#device-id', 'bad id!');
    await page.click('#connect');
    expect(await shown(page, '#connection-problem', 'Device id "bad id!"')).toContain('1-62 letters, digits');
    expect(await page.getAttribute('#connection-problem', 'data-reason')).toBe('invalid');

    await page.fill('#device-id', 'console-1');
    await page.click('#connect');
    await page.waitForSelector('#connection-state[data-state="open"]');
    await page.click('[data-tab="tools"]');
    const battery = page.locator('.device-tool').first();
    await battery.locator('textarea[aria-label="Answer (JSON)"]').fill('{"level": 42}');
    await page.click('#device-tool-add');
    await page.click('#device-tool-add');
    await page.locator('.device-tool').nth(1).locator('input[aria-label="Name"]').fill('reboot');
    await page.locator('.device-tool').nth(1).locator('select[aria-label="Who may call it"]').selectOption('agents');
    await page.locator('.device-tool').nth(2).locator('input[aria-label="Name"]').fill('volume');
    await page.locator('.device-tool').nth(2).locator('select[aria-label="Who may call it"]').selectOption('model');
    await page.click('#device-tools-register');
    await page.locator('.device-tool').nth(2).locator('.tool-status[data-state="registered"]').waitFor();
    await battery.locator('.tool-status[data-state="registered"]').waitFor();

    await page.click('[data-tab="devices"]');
    const self = card(page, 'console-1');
    const tool = self.locator('.fleet-tool[data-tool="get_battery"]');
    await tool.waitFor();
    // Agents see what the page offers them: not the tool it keeps for its model.
    expect(
      await self.locator('.fleet-tool').evaluateAll((items: any[]) => items.map((item) => [item.dataset.tool, item.querySelector('.badge').textContent])),
    ).toEqual([
      ['get_battery', 'both'],
      ['reboot', 'agents'],
    ]);
    await tool.locator('summary').click();
    await tool.locator('button[type="submit"]').click();
    expect(await shown(page, '.fleet-tool[data-tool="get_battery"] .call-result[data-ok="true"]', 'HTTP 200')).toContain('"level": 42');

    await self.locator('form.say input[name="text"]').fill('Hello from the Devices view');
    await self.locator('form.say button').click();
    await shown(page, '.fleet-device .call-result[data-push="say"][data-ok="true"]', 'Taken to the device');
    await page.click('[data-tab="chat"]');
    expect(await shown(page, '.entry-assistant.pushed', 'Hello from the Devices view')).toContain('Pushed by the gateway');

    // Another connection takes the id: the page lets it go rather than take it back for ever.
    const taker = await pages.stack.connect('/', { Authorization: `Bearer ${TOKEN}`, 'Device-Id': 'console-1' });
    sockets.push(taker);
    expect(await shown(page, '#connection-problem', 'close 4409')).toContain('another connection named itself device "console-1"');
    expect(await page.getAttribute('#connection-problem', 'data-reason')).toBe('replaced');
    await taker.expectSilence(1500);
    expect(taker.socket.readyState).toBe(WebSocket.OPEN);
    expect(await page.getAttribute('#connection-state', 'data-state')).toBe('idle');
    const listed = await (await fetch(pages.stack.gateway.http('/devices/console-1'), { headers: { Authorization: `Bearer ${TOKEN}` } })).json();
    expect(listed).toMatchObject({ id: 'console-1', tools: [] });
  });
});
