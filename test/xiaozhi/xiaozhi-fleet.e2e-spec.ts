/** @jest-environment ./test/support/native-typed-arrays.environment.js */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { mkdtempSync, rmSync, writeFileSync } from 'fs';
import type Redis from 'ioredis';
import { tmpdir } from 'os';
import { join } from 'path';
import { ReplicaMessaging } from '../../src/fleet/replicas/replica-messaging';
import { bearer, eventually, GatewayAddress, getJson, onPort, postJson } from '../support/fleet-client';
import { listeningPort, MainProcess, startMain } from '../support/main-process';
import { inspector, removeKeys, TEST_REDIS_URL, uniquePrefix } from '../support/redis';
import { sine } from '../support/scripted-speech-server';
import { XiaozhiDevice, XiaozhiDeviceOptions } from '../support/xiaozhi/xiaozhi-device';
import { AGENT_TOKEN, bootDevice, DEVICE_TOKEN, startXiaozhiStack, XiaozhiStack } from '../support/xiaozhi/xiaozhi-stack';

const OUTPUT_RATE = 24_000;
const STRANGER_TOKEN = 'xiaozhi-stranger-secret';
/**
 * The devices' token may connect as the lab's boards only, over xiaozhi only; the home agent's is
 * another principal, granted those boards by glob; a stranger's reaches none of them.
 */
const TOKENS = `
tokens:
  - name: lab-boards
    token: ${DEVICE_TOKEN}
    protocols: [xiaozhi]
    devices: ["aa:bb:cc:*"]
  - name: home-agent
    token: ${AGENT_TOKEN}
    devices: ["aa:bb:cc:*"]
  - name: stranger
    token: ${STRANGER_TOKEN}
`;
/** The tools a simulated board lists (its user-only tools are not listed), as agents' catalogue names them. */
const BOARD_TOOLS = ['self_audio_speaker_set_volume', 'self_get_device_status', 'self_light_set_rgb'];

/** `seconds` of a tone as one sentence's synthesized speech: its 60 ms frames can be counted. */
const tone = (seconds: number) => ({ samples: sine(440, seconds, OUTPUT_RATE) });
/** The name agents call a device's tool by: the id with `:` as `.`, then `__`, then the tool. */
const agentName = (id: string, tool: string) => `${id.replaceAll(':', '.')}__${tool}`;
const isTts = (state: string, text?: string) => (message: any) => message.state === state && (text === undefined || message.text === text);

/**
 * xiaozhi devices in a fleet of two replicas on one Redis: A, a `node dist/main.js` process that
 * holds the device's WebSocket (its audit log is its output), and B, in this process, where the
 * agents, the pushes and the reminders come in. Both speak with the same scripted model,
 * recognizer and synthesizer (B's stack's). The simulated firmware is the one of
 * test/support/xiaozhi: real Opus both ways, its own MCP server for its tools.
 */
describe('xiaozhi devices across replicas', () => {
  const prefix = uniquePrefix();
  const tokensDir = mkdtempSync(join(tmpdir(), 'vtg-xiaozhi-fleet-'));
  const tokensFile = join(tokensDir, 'tokens.yaml');
  writeFileSync(tokensFile, TOKENS, { mode: 0o600 });
  const shared = { REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: prefix, AUTH_TOKENS: '', AUTH_TOKENS_FILE: tokensFile, XIAOZHI_DEVICE_TOKEN: DEVICE_TOKEN };
  let redis: Redis;
  let b: XiaozhiStack;
  let bAt: GatewayAddress;
  let bInstance: string;
  let a: MainProcess;
  let aAt: GatewayAddress;
  const devices: XiaozhiDevice[] = [];
  const agents: Client[] = [];

  /** A device booted against A: its configuration asked of A, its session opened there. */
  const deviceOnA = async (id: string, options: XiaozhiDeviceOptions = {}): Promise<XiaozhiDevice> => {
    const device = await bootDevice(aAt.http('/xiaozhi/ota/'), { deviceId: id, ...options });
    devices.push(device);
    return device;
  };

  /** The device as `at`'s directory lists it to the agent, once it lists it with its MCP tools (or `undefined` once it lists it no more, with `online` false). */
  const listed = async (at: GatewayAddress, id: string, online = true): Promise<any> => {
    let entry: any;
    await eventually(
      async () => {
        const { status, body } = await getJson(at, `/devices/${id}`, AGENT_TOKEN);
        entry = status === 200 ? body : undefined;
        return online ? entry?.tools.length > 0 : entry === undefined;
      },
      10_000,
      `device ${id} ${online ? 'listed with its tools' : 'gone'}`,
    );
    return entry;
  };

  /** An MCP agent (the official SDK over Streamable HTTP) on B, at `/mcp` or a device's own `/mcp/devices/<id>`. */
  const agentOnB = async (path = '/mcp'): Promise<Client> => {
    const client = new Client({ name: 'xiaozhi-fleet', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(bAt.http(path)), { requestInit: { headers: bearer(AGENT_TOKEN) } }));
    agents.push(client);
    return client;
  };

  const postOnB = (path: string, body: unknown) => postJson(bAt, path, AGENT_TOKEN, body);

  const metricsOf = async (at: GatewayAddress) => (await fetch(at.http('/metrics'), { headers: bearer(AGENT_TOKEN) })).text();

  beforeAll(async () => {
    redis = await inspector();
    b = await startXiaozhiStack(shared);
    bAt = b.gateway;
    bInstance = b.gateway.app.get(ReplicaMessaging).instanceId;
    a = startMain({
      ...shared,
      LLM_BASE_URL: b.llm.baseUrl,
      LLM_MAX_RETRIES: '0',
      LLM_TIMEOUT: '5',
      STT_BASE_URL: b.stt.baseUrl,
      TTS_BASE_URL: b.tts.baseUrl,
      STT_TIMEOUT: '5',
      TTS_TIMEOUT: '5',
      DEFAULT_TIMEZONE: 'Asia/Shanghai',
      CLOUD_LOG_LEVEL: 'INFO',
      CLOUD_LOG_FORMAT: 'json',
    });
    aAt = onPort(await listeningPort(a.output));
  }, 30_000);

  afterEach(async () => {
    await Promise.all(agents.splice(0).map((agent) => agent.close()));
    await Promise.all(devices.splice(0).map((device) => device.close()));
    b.llm.reset();
    b.stt.reset();
    b.tts.reset();
  });

  afterAll(async () => {
    if (a && a.child.exitCode === null && a.child.signalCode === null) {
      a.child.kill('SIGTERM');
      await a.exited;
    }
    await b?.close();
    if (redis) {
      await removeKeys(redis, prefix);
      redis.disconnect();
    }
    rmSync(tokensDir, { recursive: true, force: true });
  });

  it("lists a device connected to A in B's directory, as xiaozhi, with its MCP tools, to the tokens that may reach it only", async () => {
    await deviceOnA('aa:bb:cc:00:01:01', { firmwareVersion: '2.4.2' });
    const entry = await listed(bAt, 'aa:bb:cc:00:01:01');
    expect(entry).toMatchObject({ id: 'aa:bb:cc:00:01:01', protocol: 'xiaozhi', user_agent: 'bread-compact-wifi/2.4.2' });
    expect(entry.instance).not.toBe(bInstance);
    expect(entry.tools.map((tool: any) => tool.name).sort()).toEqual(BOARD_TOOLS);
    expect(entry.tools.find((tool: any) => tool.name === 'self_audio_speaker_set_volume')).toEqual({
      name: 'self_audio_speaker_set_volume',
      agent_name: 'aa.bb.cc.00.01.01__self_audio_speaker_set_volume',
      description: expect.stringContaining('speaker volume'),
      input_schema: { type: 'object', properties: { volume: { type: 'integer', minimum: 0, maximum: 100 } }, required: ['volume'] },
      visibility: 'both',
    });
    const all = await getJson(bAt, '/devices', AGENT_TOKEN);
    expect(all.body.devices.map((device: any) => [device.id, device.protocol])).toEqual([['aa:bb:cc:00:01:01', 'xiaozhi']]);
    // Another principal, not granted the lab's boards, sees nothing of it.
    expect((await getJson(bAt, '/devices', STRANGER_TOKEN)).body).toEqual({ devices: [] });
    expect((await getJson(bAt, '/devices/aa:bb:cc:00:01:01', STRANGER_TOKEN)).status).toBe(404);
  });

  it("lets an MCP agent on B list the device's tools and set its volume on A, audited and metered where it ran", async () => {
    const device = await deviceOnA('aa:bb:cc:00:02:01');
    await listed(bAt, 'aa:bb:cc:00:02:01');
    const agent = await agentOnB();
    const names = (await agent.listTools()).tools.map((tool) => tool.name);
    expect(names).toEqual(expect.arrayContaining(BOARD_TOOLS.map((tool) => agentName('aa:bb:cc:00:02:01', tool))));
    expect(names).toEqual(expect.arrayContaining(['device_say', 'set_reminder']));
    const own = await agentOnB('/mcp/devices/aa:bb:cc:00:02:01');
    expect((await own.listTools()).tools.map((tool) => tool.name).sort()).toEqual(BOARD_TOOLS);

    const set = await agent.callTool({ name: agentName('aa:bb:cc:00:02:01', 'self_audio_speaker_set_volume'), arguments: { volume: 33 } });
    expect(set.isError).toBeFalsy();
    expect(set.content).toEqual([{ type: 'text', text: 'true' }]);
    expect(device.board.volume).toBe(33);
    // The device's own endpoint reads it back, by the tool's own name.
    const status = await own.callTool({ name: 'self_get_device_status', arguments: {} });
    expect(JSON.parse((status.content as any)[0].text)).toMatchObject({ audio_speaker: { volume: 33 } });
    // An argument the device's schema refuses never reaches it.
    const refused = await agent.callTool({ name: agentName('aa:bb:cc:00:02:01', 'self_audio_speaker_set_volume'), arguments: { volume: 300 } });
    expect(refused.isError).toBe(true);
    expect(device.board.volume).toBe(33);

    // Metered on A, where they ran (under `fleet`), and on B, where they were asked (under `mcp`).
    expect(await metricsOf(aAt)).toMatch(/gateway_tool_calls_total\{protocol="fleet",tool="other",source="device",outcome="ok"\} 2\n/);
    expect(await metricsOf(bAt)).toMatch(/gateway_tool_calls_total\{protocol="mcp",tool="other",source="device",outcome="ok"\} 2\n/);
    // Audited on A, in the agent's name.
    const audited = () =>
      a
        .output()
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line))
        .filter((line) => line.context === 'Audit' && JSON.stringify(line).includes('aa.bb.cc.00.02.01__self_audio_speaker_set_volume'));
    await eventually(() => audited().length === 1, 5000, 'the audit line on A');
    expect(JSON.stringify(audited()[0])).toMatch(/"protocol":"fleet".*"outcome":"ok"/);
    expect(JSON.stringify(audited()[0])).toContain('"token":"name:home-agent"');
  });

  it('speaks a push made through B on the device on A: tts start, the sentence, its Opus, tts stop', async () => {
    const device = await deviceOnA('aa:bb:cc:00:03:01');
    await listed(bAt, 'aa:bb:cc:00:03:01');
    b.tts.reply(tone(0.5), tone(0.2), tone(0.2));
    const said = await postOnB('/devices/aa:bb:cc:00:03:01/say', { text: 'Dinner is ready.' });
    expect(said).toMatchObject({ status: 200, body: { delivered: 'spoken', turn_id: expect.stringMatching(/^push-/) } });
    await device.next('tts', isTts('start'));
    expect(await device.next('tts', isTts('sentence_start'))).toMatchObject({ text: 'Dinner is ready.' });
    await device.next('tts', isTts('stop'));
    expect(device.turns).toHaveLength(1);
    expect(device.turns[0].sentences.map((sentence) => sentence.text)).toEqual(['Dinner is ready.']);
    // Half a second of speech: 9 frames of 60 ms (the last padded), each decoded and played.
    expect(device.turns[0].sentences[0].packets).toHaveLength(9);
    expect(device.audioStats()).toMatchObject({ received: 9, played: 9, undecodable: 0, malformed: 0 });
    expect(device.playedDurationMs()).toBeGreaterThanOrEqual(500);
    expect(device.playedDurationMs()).toBeLessThanOrEqual(560);
    expect(b.tts.requests.map((request) => request.input)).toEqual(['Dinner is ready.']);

    // The same through the fan-out route, and through the `device_say` tool of an agent on B.
    const fanOut = await postOnB('/devices/say', { devices: ['aa:bb:cc:00:03:*'], text: 'Everyone to the table.' });
    expect(fanOut).toMatchObject({ status: 200, body: { results: [{ device: 'aa:bb:cc:00:03:01', delivered: 'spoken' }] } });
    expect(await device.next('tts', isTts('sentence_start'))).toMatchObject({ text: 'Everyone to the table.' });
    await device.next('tts', isTts('stop'));
    const agent = await agentOnB();
    const tool = await agent.callTool({ name: 'device_say', arguments: { device_id: 'aa:bb:cc:00:03:01', text: 'Bring the salad.' } });
    expect(tool.isError).toBeFalsy();
    expect(tool.structuredContent ?? JSON.parse((tool.content as any)[0].text)).toMatchObject({ delivered: 'spoken' });
    expect(await device.next('tts', isTts('sentence_start'))).toMatchObject({ text: 'Bring the salad.' });
    await device.next('tts', isTts('stop'));
    expect(device.audioStats()).toMatchObject({ undecodable: 0, malformed: 0 });
  });

  it('speaks a reminder an agent on B sets for the device on A when it falls due', async () => {
    const device = await deviceOnA('aa:bb:cc:00:04:01');
    await listed(bAt, 'aa:bb:cc:00:04:01');
    b.tts.reply(tone(0.5));
    const agent = await agentOnB();
    const setAt = Date.now();
    const set = await agent.callTool({ name: 'set_reminder', arguments: { device_id: 'aa:bb:cc:00:04:01', in_s: 1.5, text: 'Time to stretch your legs.' } });
    expect(set.isError).toBeFalsy();
    const reminder = set.structuredContent as { id: string; device_id: string; due_at: string; text: string };
    expect(reminder).toMatchObject({ id: expect.stringMatching(/^rem_/), device_id: 'aa:bb:cc:00:04:01', text: 'Time to stretch your legs.' });
    expect(reminder.due_at).toMatch(/\+08:00$/);
    const listedReminders = await agent.callTool({ name: 'list_reminders', arguments: { device_id: 'aa:bb:cc:00:04:01' } });
    expect((listedReminders.structuredContent as any).reminders.map((pending: any) => pending.id)).toEqual([reminder.id]);

    await device.next('tts', isTts('start'), 8000);
    const spokenAt = Date.now();
    expect(await device.next('tts', isTts('sentence_start'))).toMatchObject({ text: 'Time to stretch your legs.' });
    expect(spokenAt).toBeGreaterThanOrEqual(setAt + 1500);
    expect(spokenAt).toBeLessThan(setAt + 1500 + 3000);
    await device.next('tts', isTts('stop'));
    expect(device.turns[0].sentences[0].packets).toHaveLength(9);
    const after = await agent.callTool({ name: 'list_reminders', arguments: { device_id: 'aa:bb:cc:00:04:01' } });
    expect((after.structuredContent as any).reminders).toEqual([]);
  });

  it('cuts the long answer the device is hearing for a push with interrupt', async () => {
    const device = await deviceOnA('aa:bb:cc:00:05:01');
    await listed(bAt, 'aa:bb:cc:00:05:01');
    b.llm.reply({ text: 'Once upon a time there was a lamp that told very long stories.' });
    b.tts.reply(tone(6), tone(0.5));
    const turn = await postOnB('/devices/aa:bb:cc:00:05:01/turns', { text: 'Tell me a long story' });
    expect(turn).toMatchObject({ status: 200, body: { delivered: 'spoken' } });
    await device.next('tts', isTts('start'), 8000);
    expect(await device.next('tts', isTts('sentence_start'), 8000)).toMatchObject({ text: expect.stringContaining('Once upon a time') });
    await sleep(500);
    const pushedAt = device.nowMs();
    const said = await postOnB('/devices/aa:bb:cc:00:05:01/say', { text: 'The doorbell is ringing.', interrupt: true });
    expect(said).toMatchObject({ status: 200, body: { delivered: 'spoken' } });
    await device.next('tts', isTts('stop'));
    expect(await device.next('tts', isTts('sentence_start'))).toMatchObject({ text: 'The doorbell is ringing.' });
    await device.next('tts', isTts('stop'));
    const [story, push] = device.turns;
    expect(story.stoppedAtMs! - pushedAt).toBeLessThan(1000);
    expect(story.stoppedAtMs!).toBeLessThanOrEqual(push.startedAtMs);
    // Six seconds of speech would be 100 frames: the story was cut after about a second of it.
    expect(story.sentences[0].packets.length).toBeLessThan(50);
    expect(push.sentences.map((sentence) => sentence.text)).toEqual(['The doorbell is ringing.']);
    expect(push.sentences[0].packets).toHaveLength(9);
  });

  it('lets a push without interrupt wait for the answer in flight, which is heard to its end first', async () => {
    const device = await deviceOnA('aa:bb:cc:00:05:02');
    await listed(bAt, 'aa:bb:cc:00:05:02');
    b.llm.reply({ text: 'The weather is fine all day.' });
    b.tts.reply(tone(1.5), tone(0.5));
    expect(await postOnB('/devices/aa:bb:cc:00:05:02/turns', { text: 'How is the weather' })).toMatchObject({ status: 200, body: { delivered: 'spoken' } });
    await device.next('tts', isTts('sentence_start'), 8000);
    const said = await postOnB('/devices/aa:bb:cc:00:05:02/say', { text: 'The laundry is done.' });
    expect(said).toMatchObject({ status: 200, body: { delivered: 'queued' } });
    await device.next('tts', isTts('stop'), 5000);
    expect(await device.next('tts', isTts('sentence_start'), 5000)).toMatchObject({ text: 'The laundry is done.' });
    await device.next('tts', isTts('stop'));
    const [answer, push] = device.turns;
    expect(answer.sentences.map((sentence) => sentence.text)).toEqual(['The weather is fine all day.']);
    // Heard whole: 1.5 s is 25 frames of 60 ms.
    expect(answer.sentences[0].packets).toHaveLength(25);
    expect(answer.stoppedAtMs!).toBeLessThanOrEqual(push.startedAtMs);
    expect(push.sentences[0].packets).toHaveLength(9);
  });

  it('follows the device when it leaves A and connects to B: the directory moves, and its tools answer again from either replica', async () => {
    const device = await deviceOnA('aa:bb:cc:00:06:01');
    const onA = await listed(bAt, 'aa:bb:cc:00:06:01');
    expect(onA.instance).not.toBe(bInstance);

    device.disconnect();
    await listed(bAt, 'aa:bb:cc:00:06:01', false);
    await device.connect(bAt.ws('/xiaozhi/v1/'));
    const onB = await listed(bAt, 'aa:bb:cc:00:06:01');
    // The board it reported to A at boot is read back on B (the reports are in Redis).
    expect(onB).toMatchObject({ protocol: 'xiaozhi', instance: bInstance, user_agent: 'bread-compact-wifi/2.4.2' });
    expect(onB.tools.map((tool: any) => tool.name).sort()).toEqual(BOARD_TOOLS);
    expect((await listed(aAt, 'aa:bb:cc:00:06:01')).instance).toBe(bInstance);

    const agent = await agentOnB();
    const set = await agent.callTool({ name: agentName('aa:bb:cc:00:06:01', 'self_audio_speaker_set_volume'), arguments: { volume: 12 } });
    expect(set.isError).toBeFalsy();
    expect(device.board.volume).toBe(12);
    // From A now, where it was: the call goes to B.
    const fromA = await postJson(aAt, '/devices/aa:bb:cc:00:06:01/tools/self_audio_speaker_set_volume', AGENT_TOKEN, { volume: 55 });
    expect(fromA.status).toBe(200);
    expect(device.board.volume).toBe(55);
  });
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
