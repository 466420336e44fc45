import { join } from 'path';
import type { Page } from 'playwright-core';
import { ToolRegistryService } from '../../src/core/tools/tool-registry.service';
import { ARTIFACTS_DIR } from '../support/browser';
import { consoleInBrowser, DESKTOP, PHONE } from '../support/console-browser';
import { RunningGateway, startGateway } from '../support/gateway';
import { freePort } from '../support/ports';
import { toolResults } from '../support/scripted-llm';

const TOKEN = 'console-token';

/**
 * The web console in headless Chromium against the real gateway and a scripted model: what a
 * person at the page sees. One screenshot per main view goes to test-artifacts/.
 */
describe('web console in a real browser', () => {
  const pages = consoleInBrowser({ AUTH_TOKENS: TOKEN, CLIENT_TOOL_TIMEOUT: 2 });

  /** A console page, connected with `token`; waits until the page says so. */
  async function openConsole(token = TOKEN, viewport = DESKTOP): Promise<Page> {
    const page = await pages.newPage('/', viewport);
    await page.fill('#token', token);
    await page.click('#connect');
    if (token === TOKEN) await page.waitForSelector('#connection-state[data-state="open"]');
    return page;
  }

  /** Connects the page to the gateway its URL field names, with `token`; resolves with the state reached. */
  async function connectWith(page: Page, token: string): Promise<string> {
    await page.fill('#token', token);
    await page.click('#connect');
    await page.waitForFunction(() => {
      const doc = (globalThis as any).document;
      return doc.querySelector('#connection-state').dataset.state === 'open' || !doc.querySelector('#connection-problem').hidden;
    });
    return (await page.getAttribute('#connection-state', 'data-state'))!;
  }

  async function say(page: Page, text: string): Promise<void> {
    await page.fill('#chat-input', text);
    await page.press('#chat-input', 'Enter');
  }

  /** Waits for an element of `selector` that contains `text`; returns its text. */
  async function shown(page: Page, selector: string, text: string | RegExp): Promise<string> {
    const element = page.locator(selector, { hasText: text }).last();
    await element.waitFor({ timeout: 10_000 });
    return (await element.textContent()) ?? '';
  }

  const screenshot = (page: Page, name: string) => page.screenshot({ path: join(ARTIFACTS_DIR, `${name}.png`) });

  it('connects with a token, holds a conversation and logs every frame with its time and direction', async () => {
    const page = await openConsole();
    const sessionId = await page.textContent('#session-id');
    expect(sessionId).toMatch(/^[0-9a-f-]{36}$/);
    await shown(page, '.entry-note', `Connected: session ${sessionId}`);

    await say(page, 'hello');
    await shown(page, '.entry-assistant', 'You said: hello');
    expect(await page.locator('.entry-user').last().textContent()).toBe('hello');

    await page.waitForSelector('#frames li[data-direction="in"][data-type="status"]:last-child');
    const frames = await page
      .locator('#frames li')
      .evaluateAll((items: any[]) => items.map((item) => `${item.dataset.direction}:${item.dataset.type}:${item.querySelector('.direction')?.textContent}`));
    // The page asks for sentence streaming on connecting: a sentence, then the final answer.
    expect(frames).toEqual(['in:status:←', 'out:configure:→', 'out:text_input:→', 'in:status:←', 'in:llm_response:←', 'in:llm_response:←', 'in:status:←']);
    expect(await page.locator('#frames li time').first().textContent()).toMatch(/^\d\d:\d\d:\d\d\.\d{3}$/);
    await page.click('#frames li[data-type="llm_response"] summary');
    expect(await page.textContent('#frames li[data-type="llm_response"] pre')).toContain('"content": "You said: hello"');
    await screenshot(page, 'console-chat');
  });

  it('shows an answer sentence by sentence as it streams, its first-sentence latency, and stops one with Stop', async () => {
    const page = await openConsole();
    pages.stack.llm.reply({ text: 'It is sunny in Beijing. The high is 25 degrees. The wind is light.', pace: { firstTokenMs: 50, tokensPerSecond: 20 } });
    await say(page, 'Weather?');
    // Read in the page on every frame: the streaming entry lives only until the final answer
    // comes, which can be shorter than a locator's polling interval.
    const partial = await page.waitForFunction(
      () =>
        Array.from((globalThis as any).document.querySelectorAll('.entry-assistant.streaming p') as ArrayLike<{ textContent: string }>).pop()?.textContent ||
        false,
      undefined,
      { polling: 'raf', timeout: 10_000 },
    );
    expect(await partial.jsonValue()).toMatch(/^It is sunny in Beijing\./);
    await shown(page, '.entry-assistant:not(.streaming)', 'It is sunny in Beijing. The high is 25 degrees. The wind is light.');
    expect(await shown(page, '.entry-assistant .timing', /first sentence \d+ ms · total \d+ ms/)).toBeTruthy();

    pages.stack.llm.reply({ text: 'One. Two is a longer sentence. Three never comes. Four neither.', pace: { firstTokenMs: 50, tokensPerSecond: 10 } });
    await say(page, 'Count');
    await page.locator('.entry-assistant.streaming', { hasText: 'One.' }).waitFor({ timeout: 10_000 });
    await page.click('#chat-stop');
    await shown(page, '.entry-note', 'Stopped: the answer was cancelled');
    expect(await page.locator('.entry-assistant').last().textContent()).not.toContain('Three');
    expect(await page.isDisabled('#chat-stop')).toBe(true);
    await screenshot(page, 'console-streaming');
  });

  it('registers a device tool that the model then calls, and answers with the JSON on the page', async () => {
    const page = await openConsole();
    await page.click('[data-tab="tools"]');
    const battery = page.locator('.device-tool').first();
    await battery.locator('textarea[aria-label="Answer (JSON)"]').fill('{"level": 42, "charging": true}');
    await page.click('#device-tool-add');
    await page.locator('.device-tool').nth(1).locator('input[aria-label="Name"]').fill('1bad');
    await page.click('#device-tools-register');
    await battery.locator('.tool-status[data-state="registered"]').waitFor();
    const refused = await shown(page, '.device-tool .tool-status[data-state="failed"]', 'TOOL_REGISTRATION_FAILED');
    expect(refused).toMatch(/must start with a letter/);
    await screenshot(page, 'console-device-tools');

    pages.stack.llm.reply({ toolCalls: [{ id: 'b', name: 'get_battery', arguments: {} }] }, (request) => ({
      text: `Battery at ${toolResults(request).b.level}%, ${toolResults(request).b.charging ? 'charging' : 'not charging'}`,
    }));
    await page.click('[data-tab="chat"]');
    await say(page, 'How is my battery?');
    await shown(page, '.entry-assistant', 'Battery at 42 percent, charging');
    expect(await shown(page, '.entry-tool.device', 'get_battery')).toContain('→ {"level":42,"charging":true}');
    await page.waitForSelector('#frames li[data-direction="out"][data-type="tool_result"]');

    await page.click('[data-tab="tools"]');
    await battery.locator('input[type="checkbox"]').check();
    await page.click('[data-tab="chat"]');
    pages.stack.llm.reply({ toolCalls: [{ id: 'b', name: 'get_battery', arguments: {} }] }, (request) => ({
      text: `The device said: ${toolResults(request).b.error.message}`,
    }));
    await say(page, 'And now?');
    await shown(page, '.entry-assistant', 'The device said: The device is busy');
    expect(await shown(page, '.entry-tool.device.failed', 'get_battery')).toContain('→ failed: The device is busy');
  });

  it('shows every kind of error with its code and what it means', async () => {
    const page = await openConsole();
    pages.stack.llm.reply({ fault: 'http500' });
    await say(page, 'hello');
    expect(await shown(page, '.entry-error', 'LLM_ERROR')).toMatch(/check LLM_BASE_URL/);

    pages.stack.llm.reply({ toolCalls: [{ id: 'd', name: 'calculator', arguments: { a: 1, b: 0, operation: 'divide' } }] }, { text: 'Cannot divide by zero.' });
    await say(page, '1 / 0?');
    const duringTurn = await shown(page, '.entry-tool.failed', 'Server tool calculator');
    expect(duringTurn).toContain('TOOL_EXECUTION_FAILED Division by zero');
    expect(duringTurn).toContain('the model was told why');
    await shown(page, '.entry-assistant', 'Cannot divide by zero.');

    await page.click('[data-tab="tools"]');
    await page.locator('.device-tool input[aria-label="Delay (ms)"]').first().fill('5000');
    await page.click('#device-tools-register');
    await page.locator('.device-tool .tool-status[data-state="registered"]').first().waitFor();
    await page.click('[data-tab="chat"]');
    pages.stack.llm.reply({ toolCalls: [{ name: 'get_battery', arguments: {} }] });
    await say(page, 'battery?');
    expect(await shown(page, '.entry-error', 'TOOL_RESULT_TIMEOUT')).toMatch(/did not answer within CLIENT_TOOL_TIMEOUT/);

    await page.fill('#session-resume input', 'no-such-session');
    await page.click('#session-resume button');
    expect(await shown(page, '.entry-error', 'SESSION_ERROR')).toContain('no-such-session');

    await page.fill('#settings input[name="temperature"]', '1.5');
    await page.click('#settings button');
    expect(await shown(page, '#settings-result.problem', /./)).toBe('temperature must be a number from 0 to 1');
  });

  it('explains a refused token', async () => {
    const page = await openConsole('wrong-token');
    const problem = await shown(page, '#connection-problem', 'CONNECT_FAILED');
    expect(problem).toContain('FORBIDDEN (HTTP 403): The gateway refused this token');
    expect(await page.getAttribute('#connection-problem', 'data-reason')).toBe('forbidden');
    expect(await page.getAttribute('#connection-state', 'data-state')).toBe('closed');

    expect(await connectWith(page, '')).toBe('closed');
    expect(await page.getAttribute('#connection-problem', 'data-reason')).toBe('unauthorized');
    expect(await page.textContent('#connection-problem')).toContain('UNAUTHORIZED (HTTP 401): The gateway needs a token');
  });

  it('tells an unreachable gateway apart from a refused token', async () => {
    const nobody = await freePort();
    const page = await pages.newPage(`/?gateway=${encodeURIComponent(`ws://127.0.0.1:${nobody}/`)}`);
    expect(await page.inputValue('#gateway-url')).toBe(`ws://127.0.0.1:${nobody}/`);
    expect(await connectWith(page, TOKEN)).toBe('closed');
    expect(await page.getAttribute('#connection-problem', 'data-reason')).toBe('unreachable');
    const problem = (await page.textContent('#connection-problem'))!;
    expect(problem).toContain(`UNREACHABLE: nothing answered at http://127.0.0.1:${nobody}: is the gateway running`);
    expect(problem).not.toMatch(/refused (the|this) token/);
    await screenshot(page, 'console-unreachable');
  });

  describe('pointed at another gateway', () => {
    let other: RunningGateway;

    beforeAll(async () => {
      // Another gateway on loopback, without a console of its own: the page comes from the stack's.
      other = await startGateway({ AUTH_TOKENS: 'other-token', CONSOLE_ENABLED: false });
      other.app.get(ToolRegistryService).register({
        name: 'other.greeting',
        description: 'Only the other gateway has this tool',
        inputSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
        source: 'module',
        handler: ({ name }) => `Hello, ${name as string}, from the other gateway`,
      });
    });
    afterAll(() => other?.close());

    it('connects, reads its catalogue and calls its tools, with the page served by the first one', async () => {
      const page = await pages.newPage(`/?gateway=${encodeURIComponent(other.ws('/'))}`);
      expect(await connectWith(page, 'wrong')).toBe('closed');
      expect(await page.getAttribute('#connection-problem', 'data-reason')).toBe('forbidden');

      expect(await connectWith(page, 'other-token')).toBe('open');
      await page.click('[data-tab="catalogue"]');
      const greeting = page.locator('.tool[data-tool="other.greeting"]');
      await greeting.waitFor();
      await greeting.locator('summary').first().click();
      await greeting.locator('textarea').fill('{"name": "Ada"}');
      await greeting.locator('button[type="submit"]').click();
      expect(await shown(page, '.tool[data-tool="other.greeting"] .call-result[data-ok="true"]', 'HTTP 200')).toContain(
        'text: Hello, Ada, from the other gateway',
      );
      await greeting.locator('select').selectOption('UTCP');
      await greeting.locator('button[type="submit"]').click();
      expect(await shown(page, '.tool[data-tool="other.greeting"] .call-result[data-ok="true"]', 'UTCP: result')).toContain('Hello, Ada');
    });
  });

  it('applies settings and starts, ends and resumes sessions', async () => {
    const page = await openConsole();
    await page.fill('#settings input[name="temperature"]', '0.2');
    await page.fill('#settings input[name="max_tokens"]', '64');
    await page.check('#settings input[name="enable_context"]');
    await page.click('#settings button');
    await shown(page, '#settings-result', 'Sent');
    await say(page, 'remember me');
    await shown(page, '.entry-assistant', 'You said: remember me');
    expect(pages.stack.llm.requests.at(-1)).toMatchObject({ temperature: 0.2, max_tokens: 64 });

    const first = (await page.textContent('#session-id'))!;
    await page.click('#session-end');
    await shown(page, '.entry-note', 'Session ended; new session');
    const second = (await page.textContent('#session-id'))!;
    expect(second).not.toBe(first);
    // A session left without a single exchange is deleted, so give this one something to keep.
    await say(page, 'in the second session');
    await shown(page, '.entry-assistant', 'You said: in the second session');
    await page.click('#session-new');
    await shown(page, '.entry-note', 'New session');
    await page.fill('#session-resume input', second);
    await page.click('#session-resume button');
    await shown(page, '.entry-note', `Resumed session ${second}`);
    expect(await page.textContent('#session-id')).toBe(second);
    await page.click('#ping');
    await shown(page, '.entry-note', /pong in \d+ ms/);
  });

  it('lists the catalogue with sources and schemas, and calls tools through LiteMCP and UTCP', async () => {
    const page = await openConsole();
    await page.click('[data-tab="catalogue"]');
    const calculator = page.locator('.tool[data-tool="calculator"]');
    await calculator.waitFor();
    expect(await calculator.locator('.badge').first().textContent()).toBe('module');
    expect(await page.locator('.tool[data-tool="get_weather"] .badge').first().textContent()).toBe('builtin');
    await calculator.locator('summary').first().click();
    expect(await calculator.locator('pre').first().textContent()).toContain('"required": [');
    await calculator.locator('textarea').fill('{"a": 6, "b": 7, "operation": "multiply"}');
    await calculator.locator('button[type="submit"]').click();
    expect(await shown(page, '.tool[data-tool="calculator"] .call-result[data-ok="true"]', 'HTTP 200')).toContain('number: 42');

    await calculator.locator('textarea').fill('{"a": 1, "b": 0, "operation": "divide"}');
    await calculator.locator('button[type="submit"]').click();
    expect(await shown(page, '.tool[data-tool="calculator"] .call-result[data-ok="false"]', 'HTTP 200')).toContain('text: Division by zero');
    await calculator.locator('textarea').fill('{"a": "six"}');
    await calculator.locator('button[type="submit"]').click();
    expect(await shown(page, '.tool[data-tool="calculator"] .call-result[data-ok="false"]', 'HTTP 400')).toContain('Argument "a" must be number');

    await calculator.locator('select').selectOption('UTCP');
    await calculator.locator('textarea').fill('{"a": 6, "b": 7, "operation": "multiply"}');
    await calculator.locator('button[type="submit"]').click();
    expect(await shown(page, '.tool[data-tool="calculator"] .call-result[data-ok="true"]', 'UTCP: result')).toContain('result: 42');
    await calculator.locator('textarea').fill('{"a": 1, "b": 0, "operation": "divide"}');
    await calculator.locator('button[type="submit"]').click();
    const direct = await shown(page, '.tool[data-tool="calculator"] .call-result[data-ok="false"]', 'UTCP: error TOOL_EXECUTION_FAILED');
    expect(direct).toContain('TOOL_EXECUTION_FAILED: Division by zero');
    // The console called the tool itself: no model was involved, so none was told anything.
    expect(direct).toContain('The tool ran and failed; the message above is its own.');
    expect(direct).not.toMatch(/model/);

    const countdown = page.locator('.tool[data-tool="countdown"]');
    await countdown.locator('summary').first().click();
    await countdown.locator('select').selectOption('UTCP');
    await countdown.locator('textarea').fill('{"seconds": 0.3, "interval": 0.1, "label": "tea"}');
    await countdown.locator('button[type="submit"]').click();
    const streamed = await shown(page, '.tool[data-tool="countdown"] .call-result[data-ok="true"]', 'UTCP: result');
    expect(streamed.match(/partial: \{[^}]*"label":"tea"/g)).toHaveLength(3);
    expect(streamed).toMatch(/result: \{[^}]*"done":true/);
    await calculator.locator('summary').first().click();
    await countdown.scrollIntoViewIfNeeded();
    await screenshot(page, 'console-catalogue');

    await page.fill('#catalogue-filter', 'roleplay');
    expect(await page.locator('.tool').evaluateAll((items: any[]) => items.map((item) => item.dataset.tool))).toEqual([
      'enter_roleplay_mode',
      'exit_roleplay_mode',
      'get_roleplay_status',
    ]);
  });

  it('fits a phone screen: one view at a time, the frame log a tab away', async () => {
    const page = await openConsole(TOKEN, PHONE);
    await say(page, 'hi from a phone');
    await shown(page, '.entry-assistant', 'You said: hi from a phone');
    const overflow = await page.evaluate(() => {
      const { scrollWidth, clientWidth } = (globalThis as any).document.documentElement;
      return scrollWidth - clientWidth;
    });
    expect(overflow).toBe(0);
    expect(await page.isVisible('#view-frames')).toBe(false);
    await screenshot(page, 'console-chat-phone');

    await page.click('[data-tab="frames"]');
    expect(await page.isVisible('#view-frames')).toBe(true);
    expect(await page.isVisible('#view-chat')).toBe(false);
    await page.waitForSelector('#frames li[data-type="llm_response"]');
    await screenshot(page, 'console-frames-phone');
  });
});
