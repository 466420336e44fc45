import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { mkdtempSync, rmSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { LlmClient, LlmStack, startLlmStack } from '../support/llm-stack';
import { TestSocket, UpgradeRefused } from '../support/test-socket';

const OWNER = 'owner-secret-1';
const STRANGER = 'stranger-secret-2';
const TOKENS_FILE = `tokens:
  - name: kitchen-only
    token: kitchen-secret-3
    devices: ["kitchen-*"]
`;
const KITCHEN = 'kitchen-secret-3';

const LIGHT = {
  name: 'light_on',
  description: 'Turns the light on',
  parameters: { type: 'object', properties: { room: { type: 'string' } }, required: ['room'] },
};
const REBOOT = { name: 'reboot', description: 'Restarts the device', parameters: { type: 'object' }, visibility: 'agents' };
const VOLUME = { name: 'volume', description: 'Sets the volume', parameters: { type: 'object' }, visibility: 'model' };

const auth = (token: string) => ({ Authorization: `Bearer ${token}` });

async function post(stack: LlmStack, path: string, token: string, body: unknown): Promise<{ status: number; body: any }> {
  const response = await fetch(stack.gateway.http(path), {
    method: 'POST',
    headers: { ...auth(token), 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}

async function get(stack: LlmStack, path: string, token: string): Promise<{ status: number; body: any }> {
  const response = await fetch(stack.gateway.http(path), { headers: auth(token) });
  return { status: response.status, body: await response.json() };
}

/** A device connected as `id`, its tools registered. */
async function device(stack: LlmStack, id: string, token = OWNER, tools: unknown[] = [LIGHT, REBOOT, VOLUME]): Promise<LlmClient> {
  const client = await stack.connect('/', { ...auth(token), 'Device-Id': id });
  if (tools.length > 0) {
    client.send({ type: 'register_tools', tools });
    const registered = await client.next();
    expect(registered).toMatchObject({ type: 'tools_registered', count: tools.length });
  }
  return client;
}

async function mcpClient(stack: LlmStack, token: string): Promise<Client> {
  const client = new Client({ name: 'fleet-e2e', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(stack.gateway.http('/mcp')), { requestInit: { headers: auth(token) } }));
  return client;
}

describe('Fleet on one instance: devices reachable by agents, pushes, identity', () => {
  let stack: LlmStack;
  let dir: string;
  const open: { close(): unknown }[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'vtg-fleet-'));
    const tokensFile = join(dir, 'tokens.yaml');
    writeFileSync(tokensFile, TOKENS_FILE, { mode: 0o600 });
    stack = await startLlmStack({
      AUTH_TOKENS: `${OWNER},${STRANGER}`,
      AUTH_TOKENS_FILE: tokensFile,
      CLIENT_TOOL_TIMEOUT: 2,
      FLEET_HOLD_MAX_COUNT: 3,
      FLEET_PUSH_MAX_CHARS: 500,
      FLEET_PUSH_MAX_DEVICES: 20,
    });
  });

  afterEach(async () => {
    await Promise.all(open.splice(0).map((item) => item.close()));
    stack.llm.reset();
  });

  afterAll(async () => {
    await stack.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const track = <T extends { close(): unknown }>(item: T): T => {
    open.push(item);
    return item;
  };

  it('lists an online device with the tools it offers agents, to its own principal only', async () => {
    track(await device(stack, 'AA:BB:CC:DD:EE:01'));
    const mine = await get(stack, '/devices', OWNER);
    expect(mine.status).toBe(200);
    const listed = mine.body.devices.find((entry: any) => entry.id === 'AA:BB:CC:DD:EE:01');
    expect(listed.tools.map((tool: any) => [tool.name, tool.agent_name, tool.visibility])).toEqual([
      ['light_on', 'AA.BB.CC.DD.EE.01__light_on', 'both'],
      ['reboot', 'AA.BB.CC.DD.EE.01__reboot', 'agents'],
    ]);
    expect((await get(stack, '/devices/AA:BB:CC:DD:EE:01', OWNER)).body.id).toBe('AA:BB:CC:DD:EE:01');
    expect((await get(stack, '/devices', STRANGER)).body.devices).toEqual([]);
    expect(await get(stack, '/devices/AA:BB:CC:DD:EE:01', STRANGER)).toMatchObject({ status: 404, body: { error: { code: 'DEVICE_OFFLINE' } } });
    const metrics = await (await fetch(stack.gateway.http('/metrics'), { headers: auth(OWNER) })).text();
    expect(metrics).toMatch(/^gateway_devices 1$/m);
    expect(metrics).toMatch(/^gateway_devices_local 1$/m);
  });

  it('names itself by the device_id query parameter too, and leaves the directory when it closes', async () => {
    const socket = await TestSocket.open(stack.gateway.ws(`/?device_id=lamp-1&token=${OWNER}`), { headers: auth(OWNER) });
    await socket.next();
    expect((await get(stack, '/devices/lamp-1', OWNER)).status).toBe(200);
    await socket.close();
    await waitFor(async () => (await get(stack, '/devices/lamp-1', OWNER)).status === 404);
  });

  it("lets an MCP agent list and call the device's tools; model-only tools stay with the model, agent-only tools never reach it", async () => {
    const speaker = track(await device(stack, 'speaker-1'));
    const agent = track(await mcpClient(stack, OWNER));
    const names = (await agent.listTools()).tools.map((tool) => tool.name);
    expect(names).toEqual(expect.arrayContaining(['speaker-1__light_on', 'speaker-1__reboot']));
    expect(names).not.toContain('speaker-1__volume');
    // The same tools on every agent protocol: the catalogue, UTCP's manual, LiteMCP's per-tool path.
    expect((await get(stack, '/tools', OWNER)).body.tools.map((tool: any) => tool.name)).toContain('speaker-1__reboot');
    expect(JSON.stringify((await get(stack, '/utcp', OWNER)).body)).toContain('speaker-1__light_on');
    expect((await get(stack, '/litemcp/speaker-1__light_on', OWNER)).status).toBe(200);
    expect((await get(stack, '/litemcp/speaker-1__light_on', STRANGER)).status).toBe(404);

    const call = agent.callTool({ name: 'speaker-1__light_on', arguments: { room: 'hall' } });
    const callback = await speaker.next();
    expect(callback).toMatchObject({ type: 'tool_callback', tool_name: 'light_on', arguments: { room: 'hall' } });
    speaker.send({ type: 'tool_result', call_id: callback.call_id, success: true, result: { on: true } });
    const result = await call;
    expect(result.isError).toBeFalsy();
    expect(result.content).toEqual([{ type: 'text', text: '{"on":true}' }]);

    // Bad arguments are refused before the device hears of them.
    const invalid = await agent.callTool({ name: 'speaker-1__light_on', arguments: { room: 7 } });
    expect(invalid.isError).toBe(true);
    await speaker.expectSilence(100);

    // The model sees light_on and volume, never reboot.
    stack.llm.reply({ text: 'Done.' });
    speaker.send({ type: 'text_input', text: 'hello' });
    await speaker.until('status', 'idle');
    const offered = (stack.llm.requests[0].tools ?? []).map((tool) => tool.function.name);
    expect(offered).toEqual(expect.arrayContaining(['light_on', 'volume']));
    expect(offered).not.toContain('reboot');
  });

  it('tells MCP agents when a device comes and goes', async () => {
    const agent = track(await mcpClient(stack, OWNER));
    let changes = 0;
    agent.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      changes += 1;
    });
    const speaker = await device(stack, 'speaker-2');
    await waitFor(() => changes >= 1);
    expect((await agent.listTools()).tools.map((tool) => tool.name)).toContain('speaker-2__light_on');
    await speaker.close();
    await waitFor(async () => !(await agent.listTools()).tools.some((tool) => tool.name === 'speaker-2__light_on'));
  });

  it("hides a device from another principal's agents: not listed, not callable, not pushed to", async () => {
    track(await device(stack, 'private-1'));
    const stranger = track(await mcpClient(stack, STRANGER));
    expect((await stranger.listTools()).tools.map((tool) => tool.name)).not.toContain('private-1__light_on');
    await expect(stranger.callTool({ name: 'private-1__light_on', arguments: { room: 'x' } })).rejects.toThrow(/Unknown tool/);
    expect(await post(stack, '/devices/private-1/say', STRANGER, { text: 'Hi' })).toMatchObject({ status: 404, body: { error: { code: 'DEVICE_OFFLINE' } } });
  });

  it('fails an agent call the device never answers with a timeout, and drops its late result', async () => {
    const speaker = track(await device(stack, 'slow-1'));
    const started = Date.now();
    const call = post(stack, '/devices/slow-1/tools/light_on', OWNER, { room: 'attic' });
    const callback = await speaker.next();
    const answer = await call;
    expect(answer).toMatchObject({ status: 504, body: { error: { code: 'TOOL_TIMEOUT' } } });
    expect(Date.now() - started).toBeLessThan(5000);
    speaker.send({ type: 'tool_result', call_id: callback.call_id, success: true, result: 'late' });
    expect(await speaker.next()).toMatchObject({ type: 'error', code: 'INVALID_MESSAGE' });
  });

  it("answers an agent's HTTP call that the device's tool failed with 422, not as a fault of the server", async () => {
    const speaker = track(await device(stack, 'failing-1'));
    const call = post(stack, '/devices/failing-1/tools/light_on', OWNER, { room: 'cellar' });
    const callback = await speaker.next();
    speaker.send({ type: 'tool_result', call_id: callback.call_id, success: false, error: 'Bulb broken' });
    expect(await call).toEqual({ status: 422, body: { error: { code: 'TOOL_EXECUTION_FAILED', message: 'Bulb broken' } } });
  });

  it("fails an agent's call at once when the device disconnects before answering", async () => {
    const speaker = await device(stack, 'leaving-1');
    const started = Date.now();
    const call = post(stack, '/devices/leaving-1/tools/light_on', OWNER, { room: 'porch' });
    expect(await speaker.next()).toMatchObject({ type: 'tool_callback' });
    await speaker.close();
    expect(await call).toMatchObject({ status: 503, body: { error: { code: 'TOOL_UNAVAILABLE', message: expect.stringContaining('disconnected') } } });
    expect(Date.now() - started).toBeLessThan(1500);
  });

  it('pushes a sentence the device speaks as an answer nobody asked for, marked push', async () => {
    const speaker = track(await device(stack, 'say-1'));
    const pushed = await post(stack, '/devices/say-1/say', OWNER, { text: 'Dinner is **ready**.' });
    expect(pushed).toMatchObject({ status: 200, body: { delivered: 'spoken' } });
    const response = await speaker.next();
    expect(response).toMatchObject({ type: 'llm_response', content: 'Dinner is ready.', is_final: true, origin: 'push', turn_id: pushed.body.turn_id });
    expect(await speaker.next()).toMatchObject({ type: 'status', status: 'idle', origin: 'push', turn_id: pushed.body.turn_id });
  });

  it('waits for the turn in flight, or interrupts it when asked', async () => {
    const speaker = track(await device(stack, 'say-2'));
    stack.llm.reply({ text: 'A long answer.', delayMs: 400 });
    speaker.send({ type: 'text_input', text: 'tell me', turn_id: 'mine' });
    await speaker.next(); // processing
    await post(stack, '/devices/say-2/say', OWNER, { text: 'After you.' });
    const waited = await speaker.until('status', 'idle');
    expect(waited.at(-2)).toMatchObject({ type: 'llm_response', turn_id: 'mine' });
    expect((await speaker.until('status', 'idle')).map((frame) => frame.origin)).toEqual(['push', 'push']);

    stack.llm.reply({ text: 'Another long answer.', delayMs: 1000 });
    speaker.send({ type: 'text_input', text: 'again', turn_id: 'second' });
    await speaker.next(); // processing
    await post(stack, '/devices/say-2/say', OWNER, { text: 'Fire alarm!', interrupt: true });
    const frames = await speaker.until('llm_response');
    expect(frames.map((frame) => [frame.type, frame.status, frame.turn_id])).toEqual([
      ['status', 'cancelled', 'second'],
      ['status', 'idle', 'second'],
      ['llm_response', undefined, expect.stringMatching(/^push-/)],
    ]);
    await speaker.next(); // idle of the push
  });

  it('starts a turn for the device: the model answers as if the user had said it, every frame marked push', async () => {
    const speaker = track(await device(stack, 'turn-1'));
    stack.llm.reply({ text: 'It is sunny.' });
    const started = await post(stack, '/devices/turn-1/turns', OWNER, { text: 'What is the weather?' });
    expect(started.status).toBe(200);
    const frames = await speaker.until('status', 'idle');
    expect(frames.every((frame) => frame.origin === 'push' && frame.turn_id === started.body.turn_id)).toBe(true);
    expect(frames.find((frame) => frame.type === 'llm_response' && frame.is_final).content).toBe('It is sunny.');
    expect(stack.llm.requests[0].messages.at(-1)).toMatchObject({ role: 'user', content: 'What is the weather?' });
  });

  it('refuses pushes to an offline device, or holds them in order for its next connection, bounded', async () => {
    expect(await post(stack, '/devices/gone-1/say', OWNER, { text: 'Hello?' })).toMatchObject({ status: 404, body: { error: { code: 'DEVICE_OFFLINE' } } });
    // Held only for a device the caller has connected before.
    expect(await post(stack, '/devices/gone-1/say', OWNER, { text: 'Hello?', hold_s: 60 })).toMatchObject({ status: 404 });
    const first = await device(stack, 'gone-1', OWNER, []);
    await first.close();
    await waitFor(async () => (await get(stack, '/devices/gone-1', OWNER)).status === 404);
    for (const text of ['One.', 'Two.', 'Three.'])
      expect(await post(stack, '/devices/gone-1/say', OWNER, { text, hold_s: 60 })).toMatchObject({ status: 200, body: { delivered: 'held' } });
    expect(await post(stack, '/devices/gone-1/say', OWNER, { text: 'Four.', hold_s: 60 })).toMatchObject({
      status: 429,
      body: { error: { code: 'DEVICE_BUSY' } },
    });
    expect(await post(stack, '/devices/gone-1/say', STRANGER, { text: 'Spam.', hold_s: 60 })).toMatchObject({ status: 404 });

    const back = track(await device(stack, 'gone-1', OWNER, []));
    const said: string[] = [];
    while (said.length < 3) {
      const frame = await back.next();
      if (frame.type === 'llm_response') said.push(frame.content);
    }
    expect(said).toEqual(['One.', 'Two.', 'Three.']);
  });

  it('says one sentence to many devices in one request, by id and by glob, answering each device on its own', async () => {
    const speakers = [track(await device(stack, 'fan-1', OWNER, [])), track(await device(stack, 'fan-2', OWNER, []))];
    track(await device(stack, 'fan-3', STRANGER, []));
    const pushed = await post(stack, '/devices/say', OWNER, { devices: ['fan-*', 'fan-1', 'nobody-9'], text: 'Fire *drill* now.' });
    expect(pushed.status).toBe(200);
    // fan-1 once though named twice; the stranger's fan-3 is not matched; nobody-9 is offline.
    expect(pushed.body.results).toEqual([
      { device: 'fan-1', push_id: expect.stringMatching(/^push-/), delivered: 'spoken', turn_id: expect.stringMatching(/^push-/) },
      { device: 'fan-2', push_id: expect.stringMatching(/^push-/), delivered: 'spoken', turn_id: expect.stringMatching(/^push-/) },
      { device: 'nobody-9', push_id: expect.stringMatching(/^push-/), error: { code: 'DEVICE_OFFLINE', message: 'Device "nobody-9" is not connected' } },
    ]);
    for (const [index, speaker] of speakers.entries()) {
      expect(await speaker.next()).toMatchObject({
        type: 'llm_response',
        content: 'Fire drill now.',
        origin: 'push',
        turn_id: pushed.body.results[index].turn_id,
      });
      expect(await speaker.next()).toMatchObject({ type: 'status', status: 'idle', origin: 'push' });
    }
    // A glob reaches only the caller's devices: the stranger's fan-3 alone.
    expect((await post(stack, '/devices/say', STRANGER, { devices: ['fan-*'], text: 'Mine.' })).body.results).toEqual([
      { device: 'fan-3', push_id: expect.stringMatching(/^push-/), delivered: 'spoken', turn_id: expect.stringMatching(/^push-/) },
    ]);
    // A glob that matches nothing is an empty answer, not an error.
    expect(await post(stack, '/devices/say', OWNER, { devices: ['nothing-*'], text: 'Hello?' })).toMatchObject({ status: 200, body: { results: [] } });
  });

  it('answers each device of a fan-out on its own: held when offline and asked to, busy when its queue is full', async () => {
    const first = await device(stack, 'fan-held-1', OWNER, []);
    await first.close();
    await waitFor(async () => (await get(stack, '/devices/fan-held-1', OWNER)).status === 404);
    const busy = track(await device(stack, 'fan-busy-1', OWNER, []));
    stack.llm.reply({ text: 'Slow.', delayMs: 3000 });
    busy.send({ type: 'text_input', text: 'hold the queue' });
    await busy.next(); // processing
    // Behind the turn in flight, each waits: its receipt says so.
    const waiting = await Promise.all(Array.from({ length: 8 }, () => post(stack, '/devices/fan-busy-1/say', OWNER, { text: 'Queued.' })));
    expect(waiting.map((answer) => answer.body.delivered)).toEqual(Array(8).fill('queued'));
    const pushed = await post(stack, '/devices/say', OWNER, { devices: ['fan-held-1', 'fan-busy-1'], text: 'Later.', hold_s: 60 });
    expect(pushed.body.results).toEqual([
      { device: 'fan-held-1', push_id: expect.stringMatching(/^push-/), delivered: 'held', turn_id: expect.stringMatching(/^push-/) },
      { device: 'fan-busy-1', push_id: expect.stringMatching(/^push-/), error: { code: 'DEVICE_BUSY', message: expect.any(String) } },
    ]);
  });

  it('matches globs made to backtrack at once, and keeps serving other clients meanwhile', async () => {
    const longest = 'a'.repeat(62);
    track(await device(stack, longest, OWNER, []));
    const other = track(await stack.connect('/', auth(STRANGER)));
    const pathological = `${'a*'.repeat(20)}b`;
    const fanOut = post(stack, '/devices/say', OWNER, { devices: [pathological, `${'*a'.repeat(63)}*b`], text: 'Nobody.' });
    other.send({ type: 'ping' });
    expect(await other.next()).toMatchObject({ type: 'pong' });
    expect(await fanOut).toEqual({ status: 200, body: { results: [] } });
    // The same glob that matches, matches.
    expect((await post(stack, '/devices/say', OWNER, { devices: ['a*a*a*a*a*a*a*a*a*a'], text: 'You.' })).body.results).toEqual([
      { device: longest, push_id: expect.stringMatching(/^push-/), delivered: 'spoken', turn_id: expect.stringMatching(/^push-/) },
    ]);
  });

  it('refuses a fan-out that is bad as a whole with one clear error', async () => {
    const refused = async (body: unknown, status: number, code: string) =>
      expect(await post(stack, '/devices/say', OWNER, body)).toMatchObject({ status, body: { error: { code } } });
    await refused({ text: 'Hi' }, 400, 'INVALID_MESSAGE');
    await refused({ devices: [], text: 'Hi' }, 400, 'INVALID_MESSAGE');
    await refused({ devices: 'fan-1', text: 'Hi' }, 400, 'INVALID_MESSAGE');
    await refused({ devices: ['fan-1', 'not an id'], text: 'Hi' }, 400, 'INVALID_MESSAGE');
    await refused({ devices: ['fan-1', 42], text: 'Hi' }, 400, 'INVALID_MESSAGE');
    await refused({ devices: Array.from({ length: 17 }, (_, index) => `glob-${index}-*`), text: 'Hi' }, 400, 'INVALID_MESSAGE');
    await refused({ devices: Array.from({ length: 21 }, (_, index) => `many-${index}`), text: 'Hi' }, 400, 'INVALID_MESSAGE');
    await refused({ devices: ['fan-1'], text: '' }, 400, 'INVALID_MESSAGE');
    await refused({ devices: ['fan-1'], text: 'x'.repeat(501) }, 413, 'PAYLOAD_TOO_LARGE');
    await refused({ devices: ['fan-1'], text: 'Hi', hold_s: -1 }, 400, 'INVALID_MESSAGE');
    // Globs that match more devices than a fan-out may name.
    const many = await Promise.all(Array.from({ length: 21 }, (_, index) => device(stack, `crowd-${index}`, OWNER, [])));
    many.forEach(track);
    await refused({ devices: ['crowd-*'], text: 'Hi' }, 400, 'INVALID_MESSAGE');
  });

  it('refuses bad pushes with clear errors', async () => {
    track(await device(stack, 'bad-1', OWNER, []));
    expect(await post(stack, '/devices/bad-1/say', OWNER, { text: '' })).toMatchObject({ status: 400, body: { error: { code: 'INVALID_MESSAGE' } } });
    expect(await post(stack, '/devices/bad-1/say', OWNER, { text: 'x'.repeat(501) })).toMatchObject({
      status: 413,
      body: { error: { code: 'PAYLOAD_TOO_LARGE' } },
    });
    expect(await post(stack, '/devices/bad-1/say', OWNER, { text: 'Hi', hold_s: -1 })).toMatchObject({ status: 400 });
    expect(await post(stack, '/devices/bad-1/say', OWNER, { text: 'Hi', interrupt: 'yes' })).toMatchObject({ status: 400 });
    expect(await post(stack, '/devices/bad-1/say', OWNER, ['Hi'])).toMatchObject({ status: 400 });
    expect(await post(stack, '/devices/not%20an%20id/say', OWNER, { text: 'Hi' })).toMatchObject({ status: 400 });
  });

  it('bounds a flood of pushes to one device: its queue fills, then DEVICE_BUSY, and the connection stays usable', async () => {
    const speaker = track(await device(stack, 'flood-1', OWNER, []));
    stack.llm.reply({ text: 'Slow.', delayMs: 500 });
    speaker.send({ type: 'text_input', text: 'hold the queue' });
    const answers = await Promise.all(Array.from({ length: 20 }, () => post(stack, '/devices/flood-1/say', OWNER, { text: 'Ping.' })));
    const statuses = answers.map((answer) => answer.status);
    expect(statuses.filter((status) => status === 200).length).toBeGreaterThan(0);
    expect(statuses.filter((status) => status === 429).length).toBeGreaterThan(0);
    expect(new Set(statuses)).toEqual(new Set([200, 429]));
    const accepted = statuses.filter((status) => status === 200).length;
    let spoken = 0;
    while (spoken < accepted) {
      const frame = await speaker.next();
      if (frame.origin === 'push' && frame.type === 'llm_response') spoken += 1;
    }
    stack.llm.reply({ text: 'Still here.' });
    speaker.send({ type: 'text_input', text: 'still there?' });
    expect((await speaker.until('llm_response')).at(-1)).toMatchObject({ content: 'Still here.' });
  });

  it('refuses ids outside the alphabet, ids the token may not take, and ids another principal holds; replaces its own', async () => {
    for (const id of ['', 'a b', 'x'.repeat(63), 'double__underscore', 'trailing_', 'dot.ted']) {
      await expect(TestSocket.open(stack.gateway.ws('/'), { headers: { ...auth(OWNER), 'Device-Id': id } })).rejects.toMatchObject({ status: 400 });
    }
    await expect(TestSocket.open(stack.gateway.ws('/'), { headers: { ...auth(KITCHEN), 'Device-Id': 'garage-1' } })).rejects.toMatchObject({ status: 403 });
    const kitchen = track(await device(stack, 'kitchen-1', KITCHEN, []));
    expect(kitchen).toBeDefined();

    const first = await device(stack, 'taken-1', OWNER, []);
    const refused = await TestSocket.open(stack.gateway.ws('/'), { headers: { ...auth(STRANGER), 'Device-Id': 'taken-1' } }).catch(
      (error: UpgradeRefused) => error,
    );
    expect(refused).toMatchObject({ status: 409 });

    const second = track(await device(stack, 'taken-1', OWNER, []));
    expect(await first.closed).toEqual({ code: 4409, reason: 'Replaced: this device connected again' });
    expect(await post(stack, '/devices/taken-1/say', OWNER, { text: 'Still me.' })).toMatchObject({ status: 200 });
    expect(await second.next()).toMatchObject({ content: 'Still me.' });
  });

  it('lets a token granted devices by glob reach them whoever connected them', async () => {
    track(await device(stack, 'kitchen-2', OWNER, [LIGHT]));
    const granted = await get(stack, '/devices', KITCHEN);
    expect(granted.body.devices.map((entry: any) => entry.id)).toContain('kitchen-2');
    expect((await get(stack, '/devices', STRANGER)).body.devices.map((entry: any) => entry.id)).not.toContain('kitchen-2');
  });

  it('serves one device as an MCP server of its own, its tools unprefixed, at /mcp/devices/<id>', async () => {
    const speaker = track(await device(stack, 'AA:BB:CC:00:00:07'));
    const client = new Client({ name: 'one-device', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(stack.gateway.http('/mcp/devices/AA:BB:CC:00:00:07')), { requestInit: { headers: auth(OWNER) } }),
    );
    track(client);
    expect((await client.listTools()).tools.map((tool) => tool.name).sort()).toEqual(['light_on', 'reboot']);
    const call = client.callTool({ name: 'reboot', arguments: {} });
    const callback = await speaker.next();
    expect(callback).toMatchObject({ type: 'tool_callback', tool_name: 'reboot' });
    speaker.send({ type: 'tool_result', call_id: callback.call_id, success: true, result: 'rebooting' });
    expect((await call).content).toEqual([{ type: 'text', text: 'rebooting' }]);
    await expect(client.callTool({ name: 'volume', arguments: {} })).rejects.toThrow(/Unknown tool "volume"/);

    const stranger = await fetch(stack.gateway.http('/mcp/devices/AA:BB:CC:00:00:07'), {
      method: 'POST',
      headers: { ...auth(STRANGER), 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(stranger.status).toBe(404);
    expect(await stranger.json()).toMatchObject({ jsonrpc: '2.0', error: { message: expect.stringContaining('not connected') } });
    const get = await fetch(stack.gateway.http('/mcp/devices/AA:BB:CC:00:00:07'), { headers: auth(OWNER) });
    expect(get.status).toBe(400);
    expect(get.headers.get('allow')).toBe('POST');
  });

  it('sets a reminder by voice that the device hears on time, once, and lists and cancels reminders for agents', async () => {
    const speaker = track(await device(stack, 'reminded-1', OWNER, []));
    stack.llm.reply({ toolCalls: [{ name: 'set_reminder', arguments: { in_s: 1, text: 'Take the pizza out' } }] }, { text: 'I will remind you.' });
    speaker.send({ type: 'text_input', text: 'Remind me in a second to take the pizza out' });
    const turn = await speaker.until('status', 'idle');
    const setAt = Date.now();
    expect(turn.find((frame) => frame.type === 'tool_call')).toMatchObject({ tool_name: 'set_reminder', success: true });
    const agent = track(await mcpClient(stack, OWNER));
    const listed = await agent.callTool({ name: 'list_reminders', arguments: { device_id: 'reminded-1' } });
    expect(JSON.stringify(listed.content)).toContain('Take the pizza out');
    const later = await agent.callTool({ name: 'set_reminder', arguments: { device_id: 'reminded-1', in_s: 600, text: 'Cancelled one' } });
    const laterId = (later.structuredContent as { id: string }).id;
    expect((await agent.callTool({ name: 'cancel_reminder', arguments: { id: laterId } })).isError).toBeFalsy();

    const reminder = await speaker.next(4000);
    expect(reminder).toMatchObject({ type: 'llm_response', origin: 'push', content: 'Take the pizza out', reminder_id: expect.any(String) });
    expect(Date.now() - setAt).toBeGreaterThan(500);
    expect(await speaker.next()).toMatchObject({ type: 'status', status: 'idle' });
    await speaker.expectSilence(1500);

    const past = await agent.callTool({ name: 'set_reminder', arguments: { device_id: 'reminded-1', at: '2001-01-01T00:00:00Z', text: 'Too late' } });
    expect(past.isError).toBe(true);
    const stranger = track(await mcpClient(stack, STRANGER));
    const refused = await stranger.callTool({ name: 'set_reminder', arguments: { device_id: 'reminded-1', in_s: 60, text: 'Not yours' } });
    expect(refused.isError).toBe(true);
  });

  it('offers device_say to agents, answering in the caller protocol', async () => {
    const speaker = track(await device(stack, 'tool-say-1', OWNER, []));
    const agent = track(await mcpClient(stack, OWNER));
    const said = await agent.callTool({ name: 'device_say', arguments: { device_id: 'tool-say-1', text: 'From an agent.' } });
    expect(said.isError).toBeFalsy();
    expect(await speaker.next()).toMatchObject({ type: 'llm_response', content: 'From an agent.', origin: 'push' });
    const offline = await agent.callTool({ name: 'device_say', arguments: { device_id: 'nobody-1', text: 'Hello?' } });
    expect(offline.isError).toBe(true);
    expect(JSON.stringify(offline.content)).toContain('not connected');

    // Many devices at once, each answered on its own; exactly one of device_id and device_ids.
    const second = track(await device(stack, 'tool-say-2', OWNER, []));
    const many = await agent.callTool({ name: 'device_say', arguments: { device_ids: ['tool-say-*', 'nobody-2'], text: 'To all of you.' } });
    expect(many.isError).toBeFalsy();
    expect(JSON.parse((many.content as { text: string }[])[0].text).results).toEqual([
      { device: 'tool-say-1', push_id: expect.stringMatching(/^push-/), delivered: 'spoken', turn_id: expect.stringMatching(/^push-/) },
      { device: 'tool-say-2', push_id: expect.stringMatching(/^push-/), delivered: 'spoken', turn_id: expect.stringMatching(/^push-/) },
      { device: 'nobody-2', push_id: expect.stringMatching(/^push-/), error: { code: 'DEVICE_OFFLINE', message: expect.any(String) } },
    ]);
    for (const listener of [speaker, second])
      expect(await listener.until('llm_response')).toContainEqual(expect.objectContaining({ content: 'To all of you.' }));
    const both = await agent.callTool({ name: 'device_say', arguments: { device_id: 'tool-say-1', device_ids: ['tool-say-2'], text: 'Hi.' } });
    expect(both.isError).toBe(true);
    expect(JSON.stringify(both.content)).toContain('exactly one of device_id and device_ids');
  });
});

async function waitFor(condition: () => boolean | Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('Condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
