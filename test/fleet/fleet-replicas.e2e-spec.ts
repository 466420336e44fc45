import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type Redis from 'ioredis';
import { LlmStack, startLlmStack } from '../support/llm-stack';
import { listeningPort, MainProcess, startMain } from '../support/main-process';
import { inspector, removeKeys, TEST_REDIS_URL, uniquePrefix } from '../support/redis';
import { TestSocket } from '../support/test-socket';

const TOKEN = 'fleet-replica-secret';
const auth = { Authorization: `Bearer ${TOKEN}` };
const LIGHT = { name: 'light_on', description: 'Turns the light on', parameters: { type: 'object', properties: { room: { type: 'string' } } } };

/**
 * Two replicas on one Redis: A, a `node dist/main.js` process (so it can be killed with
 * SIGKILL), and B, in this process. Devices connect to A; agents and pushes come to B.
 */
describe('Fleet across replicas (Redis)', () => {
  const prefix = uniquePrefix();
  const shared = { REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: prefix, AUTH_TOKENS: TOKEN, CLIENT_TOOL_TIMEOUT: 25 };
  let redis: Redis;
  let b: LlmStack;
  let a: MainProcess;
  let aPort: number;
  const sockets: TestSocket[] = [];

  const post = async (path: string, body: unknown) => {
    const response = await fetch(b.gateway.http(path), {
      method: 'POST',
      headers: { ...auth, 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as any };
  };

  /** A device on replica A (or B), its `connected` read and its tools registered. */
  const deviceOn = async (port: number, id: string, tools: unknown[] = [LIGHT]): Promise<TestSocket> => {
    const socket = await TestSocket.open(`ws://127.0.0.1:${port}/`, { headers: { ...auth, 'Device-Id': id } });
    sockets.push(socket);
    expect(await socket.next()).toMatchObject({ type: 'status', status: 'connected' });
    if (tools.length > 0) {
      socket.send({ type: 'register_tools', tools });
      expect(await socket.next()).toMatchObject({ type: 'tools_registered' });
    }
    return socket;
  };

  /** Until B's directory has the device online (or gone, with `online` false). */
  const onB = async (id: string, online = true, timeoutMs = 5000) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const response = await fetch(b.gateway.http(`/devices/${id}`), { headers: auth });
      if ((response.status === 200) === online) return response.status === 200 ? response.json() : undefined;
      if (Date.now() > deadline) throw new Error(`Device ${id} did not become ${online ? 'online' : 'offline'} on B`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };

  const agentOnB = async (): Promise<Client> => {
    const client = new Client({ name: 'fleet-replicas', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(b.gateway.http('/mcp')), { requestInit: { headers: auth } }));
    return client;
  };

  beforeAll(async () => {
    redis = await inspector();
    b = await startLlmStack(shared);
    a = startMain({
      ...Object.fromEntries(Object.entries(shared).map(([key, value]) => [key, String(value)])),
      LLM_BASE_URL: b.llm.baseUrl,
      LLM_MAX_RETRIES: '0',
    });
    aPort = await listeningPort(a.output);
  });

  afterEach(async () => {
    await Promise.all(sockets.splice(0).map((socket) => socket.close()));
  });

  afterAll(async () => {
    if (a.child.exitCode === null && a.child.signalCode === null) {
      a.child.kill('SIGTERM');
      await a.exited;
    }
    await b.close();
    await removeKeys(redis, prefix);
    redis.disconnect();
  });

  it('an MCP agent on B lists and calls the tools of a device connected to A', async () => {
    const device = await deviceOn(aPort, 'AA:00:00:00:00:01');
    await onB('AA:00:00:00:00:01');
    const agent = await agentOnB();
    try {
      expect((await agent.listTools()).tools.map((tool) => tool.name)).toContain('AA.00.00.00.00.01__light_on');
      const call = agent.callTool({ name: 'AA.00.00.00.00.01__light_on', arguments: { room: 'kitchen' } });
      const callback = await device.next(5000);
      expect(callback).toMatchObject({ type: 'tool_callback', tool_name: 'light_on', arguments: { room: 'kitchen' } });
      device.send({ type: 'tool_result', call_id: callback.call_id, success: true, result: 'on' });
      expect((await call).content).toEqual([{ type: 'text', text: 'on' }]);

      // A failure on the device comes back as the tool's failure.
      const failing = agent.callTool({ name: 'AA.00.00.00.00.01__light_on', arguments: {} });
      const second = await device.next(5000);
      device.send({ type: 'tool_result', call_id: second.call_id, success: false, error: 'Bulb broken' });
      const failed = await failing;
      expect(failed.isError).toBe(true);
      expect(JSON.stringify(failed.content)).toContain('Bulb broken');
    } finally {
      await agent.close();
    }
  });

  it('a push through B is spoken by the device on A; a turn started through B is answered there', async () => {
    const device = await deviceOn(aPort, 'speaker-a1', []);
    await onB('speaker-a1');
    const said = await post('/devices/speaker-a1/say', { text: 'Hello from B.' });
    expect(said).toMatchObject({ status: 200, body: { delivered: 'spoken' } });
    expect(await device.next(5000)).toMatchObject({ type: 'llm_response', content: 'Hello from B.', origin: 'push', turn_id: said.body.turn_id });
    expect(await device.next()).toMatchObject({ type: 'status', status: 'idle', origin: 'push' });

    const agent = await agentOnB();
    try {
      const asked = await agent.callTool({ name: 'device_say', arguments: { device_id: 'speaker-a1', text: 'An MCP client on B asked for this.' } });
      expect(asked.isError).toBeFalsy();
      expect(await device.next(5000)).toMatchObject({ type: 'llm_response', content: 'An MCP client on B asked for this.', origin: 'push' });
      await device.next();
    } finally {
      await agent.close();
    }

    b.llm.reply({ text: 'Answered on A.' });
    const turn = await post('/devices/speaker-a1/turns', { text: 'Say something' });
    expect(turn.status).toBe(200);
    const frames: any[] = [];
    while (!(frames.at(-1)?.type === 'status' && frames.at(-1)?.status === 'idle')) frames.push(await device.next(5000));
    expect(frames.find((frame) => frame.type === 'llm_response' && frame.is_final)).toMatchObject({ content: 'Answered on A.', origin: 'push' });
  });

  it('one fan-out through B reaches the devices on A and on B, each answered on its own', async () => {
    const onA = [await deviceOn(aPort, 'hall-a1', []), await deviceOn(aPort, 'hall-a2', [])];
    const here = await deviceOn(b.gateway.port, 'hall-b1', []);
    await Promise.all(['hall-a1', 'hall-a2', 'hall-b1'].map((id) => onB(id)));
    const pushed = await post('/devices/say', { devices: ['hall-*', 'hall-gone'], text: 'Everyone out.' });
    expect(pushed.status).toBe(200);
    expect(pushed.body.results.map((result: any) => [result.device, result.delivered ?? result.error.code])).toEqual([
      ['hall-a1', 'spoken'],
      ['hall-a2', 'spoken'],
      ['hall-b1', 'spoken'],
      ['hall-gone', 'DEVICE_OFFLINE'],
    ]);
    for (const [index, device] of [...onA, here].entries()) {
      expect(await device.next(5000)).toMatchObject({
        type: 'llm_response',
        content: 'Everyone out.',
        origin: 'push',
        turn_id: pushed.body.results[index].turn_id,
      });
      expect(await device.next()).toMatchObject({ type: 'status', status: 'idle', origin: 'push' });
    }
  });

  it('a push held through B is delivered when the device connects to A', async () => {
    const first = await deviceOn(aPort, 'held-a1', []);
    await onB('held-a1');
    await first.close();
    await onB('held-a1', false);
    expect(await post('/devices/held-a1/say', { text: 'While you were away.', hold_s: 60 })).toMatchObject({ status: 200, body: { delivered: 'held' } });
    const back = await deviceOn(aPort, 'held-a1', []);
    expect(await back.next(5000)).toMatchObject({ type: 'llm_response', content: 'While you were away.', origin: 'push' });
  });

  it('the same device connecting to B replaces its connection on A', async () => {
    const onA = await deviceOn(aPort, 'moving-1', []);
    await onB('moving-1');
    const onBSocket = await deviceOn(b.gateway.port, 'moving-1', []);
    expect(await onA.closed).toEqual({ code: 4409, reason: 'Replaced: this device connected again' });
    expect(await post('/devices/moving-1/say', { text: 'Now on B.' })).toMatchObject({ status: 200 });
    expect(await onBSocket.next(5000)).toMatchObject({ content: 'Now on B.' });
  });

  it('a replica killed with SIGKILL mid-call fails the call with a clear error well before its time limit, its devices leave, and a reminder it took fires once, on time, elsewhere', async () => {
    const device = await deviceOn(aPort, 'doomed-1');
    await onB('doomed-1');
    b.llm.reply({ toolCalls: [{ name: 'set_reminder', arguments: { in_s: 18, text: 'Stretch your legs' } }] }, { text: 'Reminder set.' });
    device.send({ type: 'text_input', text: 'Remind me in 18 seconds to stretch my legs' });
    const turn: any[] = [];
    while (!(turn.at(-1)?.type === 'status' && turn.at(-1)?.status === 'idle')) turn.push(await device.next(5000));
    expect(turn.find((frame) => frame.type === 'tool_call')).toMatchObject({ tool_name: 'set_reminder', success: true });
    const dueAt = Date.now() + 18_000;
    const agent = await agentOnB();
    try {
      const started = Date.now();
      const call = agent.callTool({ name: 'doomed-1__light_on', arguments: {} }, undefined, { timeout: 60_000 });
      expect(await device.next(5000)).toMatchObject({ type: 'tool_callback' });
      const push = post('/devices/doomed-1/say', { text: 'Queued behind nothing.' });
      expect((await push).status).toBe(200);
      a.child.kill('SIGKILL');
      await a.exited;
      const result = await call;
      expect(result.isError).toBe(true);
      expect(JSON.stringify(result.content)).toMatch(/went away|TOOL_UNAVAILABLE|unavailable/i);
      expect(Date.now() - started).toBeLessThan(20_000);
      await onB('doomed-1', false, 15_000);
      expect(await post('/devices/doomed-1/say', { text: 'Anyone?' })).toMatchObject({ status: 404, body: { error: { code: 'DEVICE_OFFLINE' } } });

      // The device comes back on B; the reminder A took is spoken there when it falls due, once.
      const back = await deviceOn(b.gateway.port, 'doomed-1', []);
      const reminder = await back.next(15_000);
      expect(reminder).toMatchObject({ type: 'llm_response', origin: 'push', content: 'Stretch your legs', reminder_id: expect.any(String) });
      expect(Date.now()).toBeGreaterThanOrEqual(dueAt - 1000);
      expect(Date.now()).toBeLessThan(dueAt + 5000);
      expect(await back.next()).toMatchObject({ type: 'status', status: 'idle', origin: 'push' });
      await back.expectSilence(2000);
    } finally {
      await agent.close();
    }
  }, 60_000);
});
