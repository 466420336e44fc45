import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { mkdtempSync, rmSync, writeFileSync } from 'fs';
import type Redis from 'ioredis';
import { tmpdir } from 'os';
import { join } from 'path';
import { connectDevice, mcpAgent, bearer } from '../support/fleet-client';
import { LlmStack, startLlmStack } from '../support/llm-stack';
import { inspector, removeKeys, TEST_REDIS_URL, uniquePrefix } from '../support/redis';
import type { TestSocket } from '../support/test-socket';

const HOME = 'home-secret-1';
const OTHER = 'other-secret-1';

/** The home principal's devices may each spend 40 tokens a day, and all of them together 70 a month. */
const TOKENS = `tokens:
  - name: home
    token: ${HOME}
    budgets: {llm_tokens_per_month: 70, per_device: {llm_tokens_per_day: 40}}
  - name: other
    token: ${OTHER}
`;

/** One turn of a device: its `text_input`, and every frame until `status: idle`. */
async function turn(device: TestSocket, text: string): Promise<any[]> {
  device.send({ type: 'text_input', text });
  const frames: any[] = [];
  for (;;) {
    const frame = await device.next(8000);
    frames.push(frame);
    if (frame.type === 'status' && frame.status === 'idle') return frames;
  }
}

const answerOf = (frames: any[]) => frames.find((frame) => frame.type === 'llm_response' && frame.is_final !== false);
const errorOf = (frames: any[]) => frames.find((frame) => frame.type === 'error');

async function http(stack: LlmStack, method: string, path: string, token: string, body?: unknown): Promise<{ status: number; body: any }> {
  const response = await fetch(stack.gateway.http(path), {
    method,
    headers: { ...bearer(token), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}

/**
 * Budgets end to end, with two gateway instances on one Redis: LLM-gateway devices charged the
 * model's reported usage, refused with BUDGET_EXCEEDED once their own or their principal's
 * budget is spent (and no model request made), the counters shared by the instances, and the
 * owner alone reading and setting a device's budget over HTTP and MCP.
 */
describe('device budgets across two instances', () => {
  const prefix = uniquePrefix();
  let dir: string;
  let redis: Redis;
  let a: LlmStack;
  let b: LlmStack;
  const open: { close(): unknown }[] = [];
  const track = <T extends { close(): unknown }>(item: T): T => (open.push(item), item);

  beforeAll(async () => {
    redis = await inspector();
    dir = mkdtempSync(join(tmpdir(), 'vtg-budgets-e2e-'));
    writeFileSync(join(dir, 'tokens.yaml'), TOKENS, { mode: 0o600 });
    const settings = { AUTH_TOKENS_FILE: join(dir, 'tokens.yaml'), REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: prefix };
    a = await startLlmStack(settings);
    b = await startLlmStack(settings);
  });

  afterEach(async () => {
    await Promise.all(open.splice(0).map((item) => item.close()));
  });

  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
    await removeKeys(redis, prefix);
    redis.disconnect();
    rmSync(dir, { recursive: true, force: true });
  });

  it('stops a device at its budget with BUDGET_EXCEEDED and no model request; its sibling on the other instance stops at the shared principal budget', async () => {
    const kitchen = track(await connectDevice(a.gateway, 'kitchen', HOME));
    // The scripted model reports 15 tokens a call: 0, 15 and 30 are below the device's 40.
    for (const text of ['one', 'two', 'three']) expect(answerOf(await turn(kitchen, text))).toMatchObject({ content: `You said: ${text}` });
    expect(a.llm.requests.every((request) => request.stream_options?.include_usage === true)).toBe(true);
    const refused = errorOf(await turn(kitchen, 'four'));
    expect(refused).toMatchObject({
      code: 'BUDGET_EXCEEDED',
      message: expect.stringMatching(/^This device's daily budget of 40 LLM tokens is spent; it resets at /),
      details: { meter: 'llm_tokens', period: 'day', scope: 'device', limit: 40, resets_at: expect.any(String) },
    });
    expect(a.llm.requests).toHaveLength(3);
    // The same again: nothing more is spent.
    expect(errorOf(await turn(kitchen, 'five'))).toMatchObject({ code: 'BUDGET_EXCEEDED' });
    expect(a.llm.requests).toHaveLength(3);

    // The other instance sees the kitchen's 45 tokens: the hall has 25 of the principal's 70 left, two turns' worth.
    const usage = await http(b, 'GET', '/devices/kitchen/usage', HOME);
    expect(usage).toMatchObject({
      status: 200,
      body: { device: 'kitchen', periods: 'UTC', usage: { llm_tokens: { day: { used: 45, limit: 40, remaining: 0 } } } },
    });
    const hall = track(await connectDevice(b.gateway, 'hall', HOME));
    expect(answerOf(await turn(hall, 'one'))).toBeDefined();
    expect(answerOf(await turn(hall, 'two'))).toBeDefined();
    expect(errorOf(await turn(hall, 'three'))).toMatchObject({
      code: 'BUDGET_EXCEEDED',
      message: expect.stringMatching(/^This account's monthly budget of 70 LLM tokens is spent/),
      details: { scope: 'principal', period: 'month', limit: 70 },
    });
    expect(b.llm.requests).toHaveLength(2);

    // Another principal's devices are not held back by home's budgets.
    const garage = track(await connectDevice(a.gateway, 'garage', OTHER));
    expect(answerOf(await turn(garage, 'hi'))).toBeDefined();

    // /metrics counts usage by principal, never by device id.
    const metrics = await (await fetch(a.gateway.http('/metrics'), { headers: bearer(HOME) })).text();
    expect(metrics).toMatch(/gateway_budget_usage_total\{principal="home",meter="llm_tokens"\} 45/);
    expect(metrics).toMatch(/gateway_budget_refusals_total\{principal="home",meter="llm_tokens"\} 2/);
    expect(metrics.split('\n').filter((line) => line.startsWith('gateway_budget') && /kitchen|hall|garage/.test(line))).toEqual([]);
  });

  it('still answers, and charges an estimate, when the model server sends no usage', async () => {
    const attic = track(await connectDevice(a.gateway, 'attic', OTHER));
    a.llm.reply({ text: 'No usage from me. '.repeat(20), usage: false });
    expect(answerOf(await turn(attic, 'hello'))).toMatchObject({ content: expect.stringMatching(/^No usage from me/) });
    const used = (await http(a, 'GET', '/devices/attic/usage', OTHER)).body.usage.llm_tokens.day.used;
    // A token per 4 characters of the request sent (system prompt, tools) and the 360 written.
    const sent = JSON.stringify(a.llm.requests.at(-1)!.messages).length + JSON.stringify(a.llm.requests.at(-1)!.tools).length;
    expect(used).toBe(Math.ceil((sent + 'No usage from me. '.repeat(20).length) / 4));
  });

  it("lets the owner alone read and set a device's budget; the stricter of the owner's and the file's applies", async () => {
    track(await connectDevice(a.gateway, 'porch', HOME)).close();
    for (const [method, path, body] of [
      ['GET', '/devices/porch/usage', undefined],
      ['GET', '/devices/porch/budget', undefined],
      ['PUT', '/devices/porch/budget', { llm_tokens_per_day: 1 }],
    ] as const) {
      expect(await http(b, method, path, OTHER, body)).toMatchObject({ status: 404, body: { error: { code: 'NOT_FOUND' } } });
    }
    expect(await http(a, 'GET', '/devices/never-seen/usage', HOME)).toMatchObject({ status: 404 });
    expect(await http(a, 'GET', '/devices/bad%20id/usage', HOME)).toMatchObject({ status: 400 });

    const set = await http(a, 'PUT', '/devices/porch/budget', HOME, { llm_tokens_per_day: 10, tts_chars_per_month: 5000 });
    expect(set).toMatchObject({
      status: 200,
      body: {
        device: 'porch',
        budget: { llm_tokens_per_day: 10, tts_chars_per_month: 5000 },
        effective: { llm_tokens_per_day: 10, tts_chars_per_month: 5000 },
      },
    });
    // Looser than the file's per_device limit: the file's applies.
    const looser = await http(b, 'PUT', '/devices/porch/budget', HOME, { llm_tokens_per_day: 1000 });
    expect(looser.body.effective).toEqual({ llm_tokens_per_day: 40 });
    for (const bad of [{ llm_tokens_per_day: -1 }, { llm_tokens_per_week: 5 }, [1], { per_device: {} }, { tts_chars_per_day: '9' }]) {
      const refused = await http(a, 'PUT', '/devices/porch/budget', HOME, bad);
      expect(refused).toMatchObject({ status: 400, body: { error: { code: 'INVALID_MESSAGE', message: expect.stringMatching(/budget/) } } });
    }
    await http(a, 'PUT', '/devices/porch/budget', HOME, { llm_tokens_per_day: 10 });
    expect((await http(b, 'GET', '/devices/porch/usage', HOME)).body.usage.llm_tokens.day).toMatchObject({ used: 0, limit: 10, remaining: 10 });

    const owner: Client = track(await mcpAgent(b.gateway, HOME));
    const usage = await owner.callTool({ name: 'device_usage', arguments: { device_id: 'porch' } });
    expect(usage.isError).toBeFalsy();
    const content = usage.content as { type: string; text: string }[];
    expect(JSON.parse(content[0].text)).toMatchObject({ device: 'porch', usage: { llm_tokens: { day: { limit: 10 } } } });
    const stranger: Client = track(await mcpAgent(b.gateway, OTHER));
    const refused = await stranger.callTool({ name: 'device_usage', arguments: { device_id: 'porch' } });
    expect(refused.isError).toBe(true);
    expect((refused.content as { text: string }[])[0].text).toMatch(/No device "porch" of yours/);
  });
});
