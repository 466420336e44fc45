/** @jest-environment ./test/support/native-typed-arrays.environment.js */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { mkdtempSync, rmSync, writeFileSync } from 'fs';
import type Redis from 'ioredis';
import { tmpdir } from 'os';
import { join } from 'path';
import { ReplicaMessaging } from '../../src/fleet/replicas/replica-messaging';
import { XiaozhiMqttServer } from '../../src/xiaozhi/mqtt/xiaozhi-mqtt.server';
import { bearer, eventually, GatewayAddress, getJson, onPort, postJson } from '../support/fleet-client';
import { listeningPort, MainProcess, startMain } from '../support/main-process';
import { inspector, removeKeys, TEST_REDIS_URL, uniquePrefix } from '../support/redis';
import { sine } from '../support/scripted-speech-server';
import { MqttXiaozhiDevice } from '../support/xiaozhi/mqtt-device';
import { AGENT_TOKEN, DEVICE_TOKEN, startXiaozhiStack, XiaozhiStack } from '../support/xiaozhi/xiaozhi-stack';

const OUTPUT_RATE = 24_000;
/** The devices' token may connect as the lab's boards only, over xiaozhi only; the agent's is another principal, granted those boards. */
const TOKENS = `
tokens:
  - name: lab-boards
    token: ${DEVICE_TOKEN}
    protocols: [xiaozhi]
    devices: ["aa:bb:cc:*"]
  - name: home-agent
    token: ${AGENT_TOKEN}
    devices: ["aa:bb:cc:*"]
`;
/** The board tools the simulated device lists, as agents' catalogue names them. */
const BOARD_TOOLS = ['self_audio_speaker_set_volume', 'self_get_device_status', 'self_light_set_rgb'];
/** A tiny Opus packet of silence (TOC 0xf8: one 20 ms CELT fullband frame). */
const OPUS_SILENCE = Buffer.from([0xf8, 0xff, 0xfe]);
const tone = (seconds: number) => ({ samples: sine(440, seconds, OUTPUT_RATE) });
const agentName = (id: string, tool: string) => `${id.replaceAll(':', '.')}__${tool}`;
const isTts = (state: string, text?: string) => (message: any) => message.state === state && (text === undefined || message.text === text);

/**
 * xiaozhi devices over MQTT + UDP in a fleet of two replicas on one Redis: A, a `node dist/main.js`
 * process whose MQTT server and UDP socket the device connects to, and B, in this process, where
 * the agents, the pushes and the reminders come in. The device's MQTT connection and audio
 * channel live on A; the fleet reaches them from B. When A stops, the device's session is
 * dropped, and it reconnects (as a load balancer in front would send it) to B with the same
 * credentials: every replica derives them alike.
 */
describe('xiaozhi devices over MQTT + UDP across replicas', () => {
  const prefix = uniquePrefix();
  const tokensDir = mkdtempSync(join(tmpdir(), 'vtg-xiaozhi-mqtt-fleet-'));
  const tokensFile = join(tokensDir, 'tokens.yaml');
  writeFileSync(tokensFile, TOKENS, { mode: 0o600 });
  const shared = {
    REDIS_URL: TEST_REDIS_URL,
    REDIS_KEY_PREFIX: prefix,
    AUTH_TOKENS: '',
    AUTH_TOKENS_FILE: tokensFile,
    XIAOZHI_DEVICE_TOKEN: DEVICE_TOKEN,
    XIAOZHI_TRANSPORT: 'mqtt',
    XIAOZHI_MQTT_HOST: '127.0.0.1',
    XIAOZHI_MQTT_PORT: '0',
  };
  let redis: Redis;
  let b: XiaozhiStack;
  let bAt: GatewayAddress;
  let bInstance: string;
  let bMqtt: XiaozhiMqttServer;
  let a: MainProcess;
  let aAt: GatewayAddress;
  const devices: MqttXiaozhiDevice[] = [];
  const agents: Client[] = [];

  /**
   * A device that booted against A: its configuration asked of A, connected to A's MQTT server,
   * its audio channel open and its microphone heard once (the gateway learns where to send a
   * channel's audio from its first packet: the firmware sends nothing else over UDP).
   */
  const deviceOnA = async (id: string): Promise<MqttXiaozhiDevice> => {
    const device = new MqttXiaozhiDevice({ deviceId: id });
    devices.push(device);
    expect((await device.requestConfiguration(aAt.http('/xiaozhi/ota/'))).status).toBe(200);
    await device.connect();
    await device.openAudioChannel();
    await device.sendAudio([OPUS_SILENCE], false);
    return device;
  };

  /** The device as `at`'s directory lists it, once it lists it with its MCP tools (or `undefined` once it lists it no more). */
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

  const agentOnB = async (): Promise<Client> => {
    const client = new Client({ name: 'xiaozhi-mqtt-fleet', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(bAt.http('/mcp')), { requestInit: { headers: bearer(AGENT_TOKEN) } }));
    agents.push(client);
    return client;
  };

  /** Waits until `device` has received `count` more UDP packets than `before`. */
  const heardPackets = (device: MqttXiaozhiDevice, before: number, count: number) =>
    eventually(() => device.audio.length >= before + count, 5000, `${count} UDP packets`);

  beforeAll(async () => {
    redis = await inspector();
    b = await startXiaozhiStack(shared);
    bAt = b.gateway;
    bInstance = b.gateway.app.get(ReplicaMessaging).instanceId;
    bMqtt = b.gateway.app.get(XiaozhiMqttServer);
    a = startMain({
      ...shared,
      LLM_BASE_URL: b.llm.baseUrl,
      LLM_MAX_RETRIES: '0',
      LLM_TIMEOUT: '5',
      STT_BASE_URL: b.stt.baseUrl,
      TTS_BASE_URL: b.tts.baseUrl,
      STT_TIMEOUT: '5',
      TTS_TIMEOUT: '5',
      SHUTDOWN_DRAIN_TIMEOUT: '2',
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

  it("lists a device on A's MQTT server in B's directory with its tools, and lets an agent on B call them over MQTT", async () => {
    const device = await deviceOnA('aa:bb:cc:20:01:01');
    expect(device.configuration.mqtt.endpoint).not.toBe(`127.0.0.1:${bMqtt.port}`);
    const entry = await listed(bAt, 'aa:bb:cc:20:01:01');
    expect(entry).toMatchObject({ id: 'aa:bb:cc:20:01:01', protocol: 'xiaozhi', user_agent: 'bread-compact-wifi/2.4.2' });
    expect(entry.instance).not.toBe(bInstance);
    expect(entry.tools.map((tool: any) => tool.name).sort()).toEqual(BOARD_TOOLS);
    const all = await getJson(bAt, '/devices', AGENT_TOKEN);
    expect(all.body.devices.map((listedDevice: any) => listedDevice.id)).toContain('aa:bb:cc:20:01:01');

    const agent = await agentOnB();
    const set = await agent.callTool({ name: agentName('aa:bb:cc:20:01:01', 'self_audio_speaker_set_volume'), arguments: { volume: 42 } });
    expect(set.isError).toBeFalsy();
    expect(set.content).toEqual([{ type: 'text', text: 'true' }]);
    expect(device.board.volume).toBe(42);
    const status = await agent.callTool({ name: agentName('aa:bb:cc:20:01:01', 'self_get_device_status'), arguments: {} });
    expect(JSON.parse((status.content as any)[0].text)).toMatchObject({ audio_speaker: { volume: 42 } });
    // The calls went to the device as `type:"mcp"` messages on its MQTT connection.
    const calls = device.mcp.seen.filter((seen) => seen.payload.method === 'tools/call');
    expect(calls.map((seen) => (seen.payload.params as any).name)).toEqual(['self.audio_speaker.set_volume', 'self.get_device_status']);
  });

  it('speaks a push and a reminder made through B on the device on A: tts start and stop over MQTT, the Opus over UDP', async () => {
    const device = await deviceOnA('aa:bb:cc:20:02:01');
    await listed(bAt, 'aa:bb:cc:20:02:01');
    b.tts.reply(tone(0.5), tone(0.5));
    const before = device.audio.length;
    const said = await postJson(bAt, '/devices/aa:bb:cc:20:02:01/say', AGENT_TOKEN, { text: 'Dinner is ready.' });
    expect(said).toMatchObject({ status: 200, body: { delivered: 'spoken' } });
    await device.next('tts', isTts('start'));
    await device.next('tts', isTts('sentence_start', 'Dinner is ready.'));
    await device.next('tts', isTts('stop'));
    // Half a second: 9 frames of 60 ms.
    await heardPackets(device, before, 9);

    const agent = await agentOnB();
    const setAt = Date.now();
    const set = await agent.callTool({ name: 'set_reminder', arguments: { device_id: 'aa:bb:cc:20:02:01', in_s: 1.5, text: 'Time to stretch your legs.' } });
    expect(set.isError).toBeFalsy();
    const heard = device.audio.length;
    await device.next('tts', isTts('start'), 8000);
    expect(Date.now()).toBeGreaterThanOrEqual(setAt + 1500);
    await device.next('tts', isTts('sentence_start', 'Time to stretch your legs.'));
    await device.next('tts', isTts('stop'));
    await heardPackets(device, heard, 9);
    expect(b.tts.requests.map((request) => request.input)).toEqual(['Dinner is ready.', 'Time to stretch your legs.']);
  });

  it("drops the device's session when A stops; the device reconnects to B with the same credentials and works there", async () => {
    const device = await deviceOnA('aa:bb:cc:20:03:01');
    await listed(bAt, 'aa:bb:cc:20:03:01');
    const dropped = new Promise<void>((resolve) => device.mqtt!.once('close', () => resolve()));
    a.child.kill('SIGTERM');
    await dropped;
    await a.exited;
    // A said goodbye to the audio channel before its MQTT server went.
    expect(device.messages.some((received) => received.message.type === 'goodbye' && received.message.session_id === device.sessionId)).toBe(true);
    await listed(bAt, 'aa:bb:cc:20:03:01', false);

    // A load balancer sends the firmware's reconnect to the replica that is left.
    await device.connect({ endpoint: `127.0.0.1:${bMqtt.port}` });
    await device.openAudioChannel();
    expect(device.channel!.port).toBe(bMqtt.udpPort);
    const onB = await listed(bAt, 'aa:bb:cc:20:03:01');
    expect(onB.instance).toBe(bInstance);
    const agent = await agentOnB();
    const set = await agent.callTool({ name: agentName('aa:bb:cc:20:03:01', 'self_light_set_rgb'), arguments: { r: 1, g: 2, b: 3 } });
    expect(set.isError).toBeFalsy();
    expect(device.board.rgb).toEqual({ r: 1, g: 2, b: 3 });

    b.stt.reply({ text: 'what time is it' });
    b.llm.reply({ text: 'It is noon.' });
    b.tts.reply(tone(0.5));
    const before = device.audio.length;
    await device.listen('auto');
    await device.say('what time is it');
    expect(await device.next<any>('stt', undefined, 10_000)).toMatchObject({ text: 'what time is it', session_id: device.sessionId });
    await device.next('tts', isTts('stop'), 10_000);
    await heardPackets(device, before, 9);
  });
});
