/** @jest-environment ./test/support/native-typed-arrays.environment.js */
import { Logger } from '@nestjs/common';
import { createSocket } from 'dgram';
import { UDP_SEQUENCE_WINDOW } from '../../src/xiaozhi/mqtt/udp-audio';
import { MQTT_MAX_KEEPALIVE_S, XiaozhiMqttServer } from '../../src/xiaozhi/mqtt/xiaozhi-mqtt.server';
import { sine } from '../support/scripted-speech-server';
import { settledMemory } from '../support/settled-memory';
import { MqttXiaozhiDevice, sealUplink } from '../support/xiaozhi/mqtt-device';
import { connectPacket, PINGREQ, publishHeader, RawMqttConnection } from '../support/xiaozhi/raw-mqtt';
import { DEVICE_TOKEN, startXiaozhiStack, XiaozhiStack } from '../support/xiaozhi/xiaozhi-stack';

const OUTPUT_RATE = 24_000;
const MAX_MESSAGE_BYTES = 64 * 1024;
/** Connections one address may hold on the MQTT server here: the CONNECT flood comes from an address of its own. */
const MAX_CONNECTIONS_PER_ADDRESS = 100;
const OPUS_SILENCE = Buffer.from([0xf8, 0xff, 0xfe]);
const agent = { Authorization: `Bearer ${DEVICE_TOKEN}` };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * What a broken or hostile MQTT client or UDP sender can do to the gateway's xiaozhi MQTT server
 * and UDP audio socket: each is refused or dropped, counted in `gateway_voice_events_total`,
 * logged (at most a line per 10 s of each kind, so a flood is not a log flood), with memory
 * bounded; and a device connected all along (the bystander) still completes a spoken turn after
 * each.
 */
describe('xiaozhi MQTT + UDP: bad input', () => {
  let stack: XiaozhiStack;
  let server: XiaozhiMqttServer;
  let bystander: MqttXiaozhiDevice;
  const devices: MqttXiaozhiDevice[] = [];
  const raws: RawMqttConnection[] = [];
  const warnings: string[] = [];
  let deviceCount = 0;

  const nextDeviceId = () => `aa:bb:cc:30:00:${(++deviceCount).toString(16).padStart(2, '0')}`;

  /** A device that asked for its configuration; `connected` also connects it and opens its audio channel, its address known (one packet sent). */
  async function boot(options: { connected?: boolean; deviceId?: string } = {}): Promise<MqttXiaozhiDevice> {
    const device = new MqttXiaozhiDevice({ deviceId: options.deviceId ?? nextDeviceId() });
    devices.push(device);
    expect((await device.requestConfiguration(stack.gateway.http('/xiaozhi/ota/'))).status).toBe(200);
    if (options.connected ?? true) {
      await device.connect();
      await device.openAudioChannel();
      device.sendPacket(OPUS_SILENCE);
    }
    return device;
  }

  const raw = async (localAddress?: string) => {
    const connection = await RawMqttConnection.open(server.port, { localAddress });
    raws.push(connection);
    return connection;
  };

  async function metric(event: string): Promise<number> {
    const text = await (await fetch(stack.gateway.http('/metrics'), { headers: agent })).text();
    const match = new RegExp(`gateway_voice_events_total\\{protocol="xiaozhi",event="${event}"\\} (\\d+)`).exec(text);
    return match ? Number(match[1]) : 0;
  }

  const waitFor = async (check: () => boolean | Promise<boolean>, timeoutMs = 3000, what = 'condition') => {
    const deadline = Date.now() + timeoutMs;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
      await sleep(25);
    }
  };

  const warned = (pattern: RegExp) => warnings.filter((line) => pattern.test(line));

  /** One manual turn of `device`: its speech heard over UDP, the answer spoken back over UDP. */
  async function expectSpokenTurn(device: MqttXiaozhiDevice): Promise<void> {
    stack.stt.reply({ text: 'hello there' });
    stack.llm.reply({ text: 'Hi, I am here.' });
    stack.tts.reply({ samples: sine(440, 0.5, OUTPUT_RATE) });
    const heard = device.audio.length;
    await device.listen('manual');
    await device.say('hello there', { beforeMs: 100, afterMs: 200 });
    await device.stopListening();
    expect(await device.next<any>('stt', (message: any) => message.text === 'hello there', 10_000)).toBeDefined();
    await device.next('tts', (message: any) => message.state === 'stop', 10_000);
    await waitFor(() => device.audio.length >= heard + 9, 5000, 'the answer over UDP');
  }

  beforeAll(async () => {
    stack = await startXiaozhiStack({
      XIAOZHI_MQTT_PORT: 0,
      XIAOZHI_MQTT_HOST: '127.0.0.1',
      XIAOZHI_TRANSPORT: 'mqtt',
      XIAOZHI_MQTT_MAX_CONNECTIONS_PER_ADDRESS: MAX_CONNECTIONS_PER_ADDRESS,
      CLOUD_MAX_MESSAGE_SIZE: MAX_MESSAGE_BYTES,
      VAD_SILENCE_MS: 500,
    });
    server = stack.gateway.app.get(XiaozhiMqttServer);
    bystander = await boot({ deviceId: 'aa:bb:cc:30:ff:01' });
    jest.spyOn(Logger.prototype, 'warn').mockImplementation((message: unknown) => void warnings.push(String(message)));
  });

  afterEach(async () => {
    await Promise.all(devices.filter((device) => device !== bystander).map((device) => device.close()));
    devices.splice(0, devices.length, bystander);
    raws.splice(0).forEach((connection) => connection.destroy());
    // Whatever the test did, the device connected all along was not touched by it.
    expect(bystander.connected).toBe(true);
    await expectSpokenTurn(bystander);
    warnings.splice(0);
    stack.llm.reset();
    stack.stt.reset();
    stack.tts.reset();
  });

  afterAll(async () => {
    jest.restoreAllMocks();
    await Promise.all(devices.splice(0).map((device) => device.close()));
    await stack?.close();
  });

  it("logs a wrong password, a publish to another device's topic and non-JSON, beside counting them", async () => {
    const device = await boot();
    const other = await boot({ connected: false });
    await expect(other.connect({ password: 'wrong' })).rejects.toThrow();
    expect(warned(/MQTT: refused client "aa:bb:cc:30:00:02" from 127\.0\.0\.1: bad credentials/)).toHaveLength(1);
    await device.publish('not json at all');
    await waitFor(() => warned(/published 15 bytes that are not JSON: dropped/).length === 1);
    const closed = new Promise((resolve) => device.mqtt!.once('close', () => resolve(undefined)));
    await device.publish('{"type":"listen","state":"start"}', 'xiaozhi/aa:bb:cc:30:ff:01/up');
    await closed;
    expect(warned(/device aa:bb:cc:30:00:01 published to "xiaozhi\/aa:bb:cc:30:ff:01\/up": refused/)).toHaveLength(1);
    // Nothing reached the device whose topic it was.
    expect(bystander.messages.filter((received) => received.message.type === 'listen')).toEqual([]);
  });

  it('ends a connection at the header of a packet over the size limit, before buffering it, and refuses a publish over CLOUD_MAX_MESSAGE_SIZE', async () => {
    const device = await boot();
    const before = await metric('mqtt_oversized');
    const closed = new Promise((resolve) => device.mqtt!.once('close', () => resolve(undefined)));
    await device.publish(JSON.stringify({ type: 'listen', state: 'start', padding: 'x'.repeat(MAX_MESSAGE_BYTES) }));
    await closed;
    expect(await metric('mqtt_oversized')).toBe(before + 1);
    expect(warned(/published \d+ bytes: refused, over 65536|sent a packet over/)).toHaveLength(1);

    // A packet announcing 200 MB: the connection ends at its header, whatever follows.
    const memoryBefore = settledMemory();
    const huge = await raw();
    await huge.write(
      connectPacket({ clientId: device.deviceId, username: device.deviceId, password: String(device.configuration.mqtt.password), keepaliveS: 60 }),
    );
    expect(await huge.connack()).toBe(0);
    await huge.write(publishHeader(200 * 1024 * 1024));
    for (let chunk = 0; chunk < 64 && !huge.isClosed; chunk++) await huge.write(Buffer.alloc(64 * 1024, 0x41));
    await huge.closed;
    expect(await metric('mqtt_oversized')).toBe(before + 2);
    expect(settledMemory() - memoryBefore).toBeLessThan(4 * 1024 * 1024);
  });

  it('takes a flood of 2000 publishes from one client without letting memory grow, and goes on serving the others', async () => {
    const device = await boot();
    const memoryBefore = settledMemory();
    const before = await metric('mqtt_not_json');
    // A device floods its own topic, unpaced: every other message JSON the session answers with an alert, the rest not JSON.
    const topic = String(device.configuration.mqtt.publish_topic);
    for (let index = 0; index < 2000; index++)
      device.mqtt!.publish(topic, index % 2 ? `{"session_id":"${device.sessionId}","type":"dance","step":${index}}` : `not json ${index}`, { qos: 0 });
    await waitFor(async () => (await metric('mqtt_not_json')) >= before + 1000, 15_000, 'the flood read');
    const alerts = () => device.messages.filter((received) => received.message.type === 'alert');
    // Each JSON message was answered (an alert for a type the session does not know), each other one dropped.
    await waitFor(() => alerts().length === 1000, 10_000, 'the alerts');
    await sleep(200);
    expect(alerts().length).toBe(1000);
    expect(await metric('mqtt_not_json')).toBe(before + 1000);
    expect(settledMemory() - memoryBefore).toBeLessThan(8 * 1024 * 1024);
    // One warning line for the non-JSON, not a thousand.
    expect(warned(/not JSON/).length).toBeLessThanOrEqual(1);
    expect(device.connected).toBe(true);
    await expectSpokenTurn(device);
  });

  it('holds at most XIAOZHI_MQTT_MAX_CONNECTIONS_PER_ADDRESS connections from one address in a CONNECT flood; other addresses connect meanwhile', async () => {
    const held = server.connections;
    const before = await metric('mqtt_refused_connection');
    const limit = MAX_CONNECTIONS_PER_ADDRESS;
    // 300 connections from 127.0.0.2 that hold on: those past the cap are closed at accept.
    const flood = await Promise.all(Array.from({ length: 300 }, () => raw('127.0.0.2')));
    await waitFor(async () => (await metric('mqtt_refused_connection')) >= before + 300 - limit, 5000, 'the refusals counted');
    expect(server.connections - held).toBe(limit);
    expect(await metric('mqtt_refused_connection')).toBe(before + 300 - limit);
    expect(flood.filter((connection) => !connection.isClosed)).toHaveLength(limit);
    expect(warned(/refused a connection from 127\.0\.0\.2: it holds 100 \(XIAOZHI_MQTT_MAX_CONNECTIONS_PER_ADDRESS\)/)).toHaveLength(1);
    // A device from another address connects during the flood.
    const device = await boot();
    await expectSpokenTurn(device);
    // The ones held send CONNECTs with a wrong password: each refused and closed.
    const badCredentials = await metric('mqtt_bad_credentials');
    const open = flood.filter((connection) => !connection.isClosed);
    await Promise.all(
      open.map((connection, index) =>
        connection.write(connectPacket({ clientId: `flood-${index}`, username: `flood-${index}`, password: 'x', keepaliveS: 60 })),
      ),
    );
    await Promise.all(open.map((connection) => connection.closed));
    expect(await metric('mqtt_bad_credentials')).toBe(badCredentials + limit);
    await waitFor(() => server.connections <= held + 1, 5000, 'the flood gone');
  });

  it('closes the first connection when a second one comes with the same client id, and serves the second', async () => {
    const first = await boot();
    const second = new MqttXiaozhiDevice({ deviceId: first.deviceId });
    devices.push(second);
    await second.requestConfiguration(stack.gateway.http('/xiaozhi/ota/'));
    const before = await metric('mqtt_replaced');
    const firstClosed = new Promise((resolve) => first.mqtt!.once('close', () => resolve(undefined)));
    await second.connect();
    await firstClosed;
    expect(await metric('mqtt_replaced')).toBe(before + 1);
    await second.openAudioChannel();
    second.sendPacket(OPUS_SILENCE);
    await expectSpokenTurn(second);
    expect(first.connected).toBe(false);
  });

  it('drops a client that stops sending within 1.5 times its keep-alive, keeps one that pings, and refuses a keep-alive of 0 or over the limit', async () => {
    const device = await boot({ connected: false });
    const credentials = { clientId: device.deviceId, username: device.deviceId, password: String(device.configuration.mqtt.password) };
    const before = await metric('mqtt_keepalive_expired');
    const silent = await raw();
    await silent.write(connectPacket({ ...credentials, keepaliveS: 1 }));
    expect(await silent.connack()).toBe(0);
    const connectedAt = Date.now();
    await silent.closed;
    const heldMs = silent.closedAt! - connectedAt;
    expect(heldMs).toBeGreaterThanOrEqual(1400);
    expect(heldMs).toBeLessThan(2200);
    expect(await metric('mqtt_keepalive_expired')).toBe(before + 1);
    expect(warned(/sent nothing for 1\.5 times its keep-alive/)).toHaveLength(1);

    const pinging = await raw();
    await pinging.write(connectPacket({ ...credentials, keepaliveS: 1 }));
    expect(await pinging.connack()).toBe(0);
    for (let ping = 0; ping < 6; ping++) {
      await sleep(500);
      await pinging.write(PINGREQ);
    }
    expect(pinging.isClosed).toBe(false);
    pinging.destroy();

    const refusals = await metric('mqtt_bad_keepalive');
    for (const keepaliveS of [0, MQTT_MAX_KEEPALIVE_S + 1]) {
      const refused = await raw();
      await refused.write(connectPacket({ ...credentials, keepaliveS }));
      expect(await refused.connack()).toBe(6);
      await refused.closed;
    }
    expect(await metric('mqtt_bad_keepalive')).toBe(refusals + 2);
  });

  it('drops datagrams that do not decrypt to Opus and ones too far ahead, without moving the sequence, and hears the device after', async () => {
    const device = await boot();
    const { key, nonce } = device.channel!;
    const notOpus = await metric('udp_not_opus');
    const outOfWindow = await metric('udp_out_of_window');
    const replayed = await metric('udp_replayed');
    // A forgery decrypts to noise under the session's key: noise that breaks Opus's framing rules (here code 3 with zero
    // frames) is dropped; the next honest packet, of the same sequence, is still heard.
    const forgedPlain = Buffer.from([0x03, 0x00, 0x11, 0x22]);
    device.sendRaw(sealUplink(key, nonce, forgedPlain, 0, 2));
    device.sendRaw(sealUplink(key, nonce, OPUS_SILENCE, 0, 2 + UDP_SEQUENCE_WINDOW + 10));
    device.sendRaw(sealUplink(key, nonce, OPUS_SILENCE, 0, 0xffffffff));
    await waitFor(async () => (await metric('udp_out_of_window')) === outOfWindow + 2 && (await metric('udp_not_opus')) === notOpus + 1);
    // The device's own numbering goes on from 2 (sendPacket counts from the last it sent): nothing was taken as replayed.
    device.sendPacket(OPUS_SILENCE);
    await sleep(100);
    expect(await metric('udp_replayed')).toBe(replayed);
    expect(warned(/not Opus once decrypted/)).toHaveLength(1);
    expect(warned(/too far ahead/)).toHaveLength(1);
    await expectSpokenTurn(device);
  });

  it('drops a flood of 5000 datagrams of no session at a bounded cost, with one log line', async () => {
    const before = await metric('udp_unknown_session');
    const memoryBefore = settledMemory();
    const sender = createSocket('udp4');
    await new Promise<void>((resolve) => sender.connect(server.udpPort, '127.0.0.1', () => resolve()));
    let sent = 0;
    for (let index = 0; index < 5000; index++) {
      const nonce = Buffer.alloc(16);
      nonce[0] = 1;
      nonce.writeUInt32BE((0x5eed0000 + index) >>> 0, 4);
      sender.send(sealUplink(Buffer.alloc(16), nonce, OPUS_SILENCE, 0, 1), () => sent++);
      if (index % 500 === 499) await sleep(5);
    }
    await waitFor(() => sent === 5000, 5000, 'the flood sent');
    sender.close();
    await sleep(300);
    const counted = (await metric('udp_unknown_session')) - before;
    // Loopback may drop some under a flood; every one that arrived was counted, none kept.
    expect(counted).toBeGreaterThan(1000);
    expect(counted).toBeLessThanOrEqual(5000);
    expect(warned(/of no open session/)).toHaveLength(1);
    expect(settledMemory() - memoryBefore).toBeLessThan(4 * 1024 * 1024);
  });
});
