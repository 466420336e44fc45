/** @jest-environment ./test/support/native-typed-arrays.environment.js */
import { createSocket } from 'dgram';
import { XiaozhiMqttServer } from '../../src/xiaozhi/mqtt/xiaozhi-mqtt.server';
import { sine } from '../support/scripted-speech-server';
import { MqttXiaozhiDevice, sealUplink } from '../support/xiaozhi/mqtt-device';
import { DEVICE_TOKEN, startXiaozhiStack, XiaozhiStack } from '../support/xiaozhi/xiaozhi-stack';

const OUTPUT_RATE = 24_000;
const halfSecond = () => ({ samples: sine(440, 0.5, OUTPUT_RATE) });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const agent = { Authorization: `Bearer ${DEVICE_TOKEN}`, 'Content-Type': 'application/json' };

/**
 * xiaozhi devices over MQTT + UDP (`main/protocols/mqtt_protocol.cc`), simulated by a real MQTT
 * client and a UDP socket with AES-CTR, against the gateway's embedded MQTT server: the
 * configuration answer's credentials, the hello's UDP channel, a spoken turn answered as
 * encrypted Opus, the fleet, and what is refused or dropped.
 */
describe('xiaozhi devices over MQTT + UDP', () => {
  let stack: XiaozhiStack;
  let server: XiaozhiMqttServer;
  const devices: MqttXiaozhiDevice[] = [];

  beforeAll(async () => {
    stack = await startXiaozhiStack({ VAD_SILENCE_MS: 500, XIAOZHI_MQTT_PORT: 0, XIAOZHI_MQTT_HOST: '127.0.0.1', XIAOZHI_TRANSPORT: 'mqtt' });
    server = stack.gateway.app.get(XiaozhiMqttServer);
  });

  afterEach(() => {
    stack.llm.reset();
    stack.stt.reset();
    stack.tts.reset();
  });

  afterAll(async () => {
    await Promise.all(devices.splice(0).map((device) => device.close()));
    await stack?.close();
  });

  async function boot(deviceId: string, options: { mainLoopDelayMs?: number } = {}): Promise<MqttXiaozhiDevice> {
    const device = new MqttXiaozhiDevice({ deviceId, ...options });
    devices.push(device);
    const answer = await device.requestConfiguration(stack.gateway.http('/xiaozhi/ota/'));
    expect(answer.status).toBe(200);
    return device;
  }

  async function metric(event: string): Promise<number> {
    const text = await (await fetch(stack.gateway.http('/metrics'), { headers: agent })).text();
    const match = new RegExp(`gateway_voice_events_total\\{protocol="xiaozhi",event="${event}"\\} (\\d+)`).exec(text);
    return match ? Number(match[1]) : 0;
  }

  const waitFor = async (check: () => boolean | Promise<boolean>, timeoutMs = 3000) => {
    const deadline = Date.now() + timeoutMs;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error('Timed out');
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  };

  it("answers the configuration request with an mqtt section: the endpoint and the device's own credentials", async () => {
    const device = await boot('aa:bb:cc:10:00:01');
    const other = await boot('aa:bb:cc:10:00:02');
    expect(device.configuration.hasMqtt).toBe(true);
    expect(device.configuration.hasWebsocket).toBe(false);
    expect(device.configuration.mqtt).toEqual({
      endpoint: `127.0.0.1:${server.port}`,
      client_id: 'aa:bb:cc:10:00:01',
      username: 'aa:bb:cc:10:00:01',
      password: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      publish_topic: 'xiaozhi/aa:bb:cc:10:00:01/up',
      keepalive: 240,
    });
    expect(other.configuration.mqtt.password).not.toBe(device.configuration.mqtt.password);
  });

  it("refuses a wrong password, and another device's", async () => {
    const device = await boot('aa:bb:cc:10:00:03');
    const other = await boot('aa:bb:cc:10:00:04');
    const before = await metric('mqtt_bad_credentials');
    await expect(device.connect({ password: 'wrong' })).rejects.toThrow(/Bad username or password|Connection refused/i);
    await expect(device.connect({ password: String(other.configuration.mqtt.password) })).rejects.toThrow();
    expect(await metric('mqtt_bad_credentials')).toBe(before + 2);
  });

  it('opens the audio channel with a udp block, hears a spoken question and speaks the answer as encrypted UDP Opus; the device is in the fleet and a push is spoken', async () => {
    const device = await boot('aa:bb:cc:10:00:05');
    await device.connect();
    const hello = await device.openAudioChannel();
    expect(hello).toMatchObject({
      type: 'hello',
      transport: 'udp',
      session_id: expect.any(String),
      audio_params: { format: 'opus', sample_rate: OUTPUT_RATE, channels: 1, frame_duration: 60 },
      udp: { server: '127.0.0.1', port: server.udpPort, key: expect.stringMatching(/^[0-9a-f]{32}$/), nonce: expect.stringMatching(/^0100[0-9a-f]{28}$/) },
    });
    stack.stt.reply({ text: 'what time is it' });
    stack.llm.reply({ text: 'It is noon.' });
    stack.tts.reply(halfSecond());
    await device.listen('auto');
    await device.say('what time is it');
    expect(await device.next<any>('stt', undefined, 10_000)).toMatchObject({ text: 'what time is it', session_id: device.sessionId });
    await device.next('tts', (message: any) => message.state === 'stop', 10_000);
    await waitFor(() => device.audio.length >= 9);
    expect(device.decodedSamples()).toBeGreaterThanOrEqual(0.5 * OUTPUT_RATE);
    expect(stack.stt.requests).toHaveLength(1);

    const listed = (await (await fetch(stack.gateway.http('/devices/aa:bb:cc:10:00:05'), { headers: agent })).json()) as any;
    expect(listed).toMatchObject({ id: 'aa:bb:cc:10:00:05', protocol: 'xiaozhi', user_agent: 'bread-compact-wifi/2.4.2' });
    stack.tts.reply(halfSecond());
    const heard = device.audio.length;
    const said = await fetch(stack.gateway.http('/devices/aa:bb:cc:10:00:05/say'), {
      method: 'POST',
      headers: agent,
      body: JSON.stringify({ text: 'Dinner is ready.' }),
    });
    expect(said.status).toBe(200);
    expect(await said.json()).toMatchObject({ delivered: 'spoken' });
    await device.next('tts', (message: any) => message.state === 'sentence_start' && message.text === 'Dinner is ready.', 5000);
    await waitFor(() => device.audio.length >= heard + 9);
    expect(device.audioWhileNotSpeaking).toBe(0);
  });

  it("holds an answer's first UDP packet until its MQTT tts start has reached a firmware that applies it on its main loop, which drops audio until then", async () => {
    // A firmware whose main loop applies tts start 20 ms after the MQTT task got it.
    const device = await boot('aa:bb:cc:10:00:0e', { mainLoopDelayMs: 20 });
    await device.connect();
    await device.openAudioChannel();
    // The device's first datagram tells the gateway where to send its audio.
    device.sendPacket(Buffer.from([0xf8, 0xff, 0xfe]));
    await sleep(100);
    const answers = 8;
    for (let index = 0; index < answers; index++) {
      stack.tts.reply({ samples: sine(440, 0.24, OUTPUT_RATE) });
      const heard = device.audio.length;
      const said = await fetch(stack.gateway.http('/devices/aa:bb:cc:10:00:0e/say'), {
        method: 'POST',
        headers: agent,
        body: JSON.stringify({ text: `Number ${index}.` }),
      });
      expect(said.status).toBe(200);
      await device.next('tts', (message: any) => message.state === 'stop', 5000);
      await sleep(30);
      // 0.24 s is four 60 ms packets; the firmware plays them only between tts start and stop.
      expect({ answer: index, played: device.audio.length - heard, dropped: device.audioWhileNotSpeaking }).toEqual({ answer: index, played: 4, dropped: 0 });
    }
  });

  it('stops sending UDP audio within a frame when the device aborts mid-answer, and keeps only what was spoken', async () => {
    const device = await boot('aa:bb:cc:10:00:0b');
    await device.connect();
    await device.openAudioChannel();
    stack.stt.reply({ text: 'tell me a story' }, { text: 'and then' });
    stack.llm.reply({ text: 'Once upon a time there was a lamp. It lived in a kitchen. The end.' }, { text: 'Fine.' });
    stack.tts.reply({ samples: sine(440, 3, OUTPUT_RATE) }, halfSecond(), halfSecond(), halfSecond());
    await device.listen('auto');
    await device.say('tell me a story');
    await device.next('tts', (message: any) => message.state === 'sentence_start', 10_000);
    await sleep(400);
    await device.abort();
    const abortedAt = device.nowMs();
    await device.next('tts', (message: any) => message.state === 'stop', 5000);
    await sleep(200);
    // Three seconds would be 50 packets; none came later than a frame after the abort.
    expect(device.audio.length).toBeLessThan(50);
    expect(device.audioAtMs.filter((atMs) => atMs > abortedAt + 60)).toEqual([]);
    await device.listen('auto');
    await device.say('and then');
    await device.next('tts', (message: any) => message.state === 'stop', 10_000);
    const history = stack.llm.requests[1].messages.filter((message) => message.role !== 'system');
    expect(history.slice(0, 2)).toEqual([
      expect.objectContaining({ role: 'user', content: 'tell me a story' }),
      expect.objectContaining({ role: 'assistant', content: 'Once upon a time there was a lamp.' }),
    ]);
  });

  it('lets the user talk over the answer in realtime mode: speech heard over UDP while it speaks cuts it', async () => {
    const device = await boot('aa:bb:cc:10:00:0c');
    await device.connect();
    await device.openAudioChannel();
    stack.stt.reply({ text: 'read me the news' }, { text: 'stop' });
    stack.llm.reply({ text: 'Here is a very long bulletin that goes on and on.' }, { text: 'Stopped.' });
    stack.tts.reply({ samples: sine(440, 6, OUTPUT_RATE) }, halfSecond());
    await device.listen('realtime');
    await device.say('read me the news');
    await device.next('tts', (message: any) => message.state === 'sentence_start', 10_000);
    await device.say('stop', { beforeMs: 100 });
    await device.next('tts', (message: any) => message.state === 'stop', 5000);
    // Six seconds would be 100 packets.
    expect(device.audio.length).toBeLessThan(100);
    expect(await device.next<any>('stt', (message: any) => message.text === 'stop', 10_000)).toBeDefined();
  });

  it('ends a manual utterance at listen stop and answers it', async () => {
    const device = await boot('aa:bb:cc:10:00:0d');
    await device.connect();
    await device.openAudioChannel();
    stack.stt.reply({ text: 'what time is it' });
    stack.llm.reply({ text: 'It is noon.' });
    stack.tts.reply(halfSecond());
    await device.listen('manual');
    await device.say('what time is it', { afterMs: 200 });
    await device.stopListening();
    expect(await device.next<any>('stt', undefined, 10_000)).toMatchObject({ text: 'what time is it' });
    await device.next('tts', (message: any) => message.state === 'stop', 10_000);
    await waitFor(() => device.audio.length >= 9);
    expect(stack.stt.requests).toHaveLength(1);
  });

  it('drops short, unknown, replayed, old and foreign datagrams, and counts them and the gaps', async () => {
    const device = await boot('aa:bb:cc:10:00:06');
    await device.connect();
    await device.openAudioChannel();
    const silence = Buffer.from([0xf8, 0xff, 0xfe]);
    const first = device.sendPacket(silence);
    // The first packet settles the session's address before the stranger's comes.
    await new Promise((resolve) => setTimeout(resolve, 100));
    const counts = {
      malformed: await metric('udp_malformed'),
      unknown: await metric('udp_unknown_session'),
      replayed: await metric('udp_replayed'),
      foreign: await metric('udp_foreign_address'),
      gap: await metric('udp_gap'),
    };
    device.sendRaw(Buffer.from([1, 0, 0]));
    const { key, nonce } = device.channel!;
    const strangerNonce = Buffer.from(nonce);
    strangerNonce.writeUInt32BE((nonce.readUInt32BE(4) ^ 0xffffffff) >>> 0, 4);
    device.sendRaw(sealUplink(key, strangerNonce, silence, 0, 1));
    device.sendRaw(first);
    const stranger = createSocket('udp4');
    await new Promise<void>((resolve) => stranger.send(sealUplink(key, nonce, silence, 0, 50), device.channel!.port, '127.0.0.1', () => resolve()));
    stranger.close();
    device.sendPacket(silence);
    device.sendPacket(silence);
    device.sendRaw(sealUplink(key, nonce, silence, 0, 10));
    device.sendRaw(sealUplink(key, nonce, silence, 0, 9));
    await waitFor(async () => (await metric('udp_replayed')) >= counts.replayed + 2, 3000);
    expect(await metric('udp_malformed')).toBe(counts.malformed + 1);
    expect(await metric('udp_unknown_session')).toBe(counts.unknown + 1);
    expect(await metric('udp_foreign_address')).toBe(counts.foreign + 1);
    expect(await metric('udp_gap')).toBe(counts.gap + 1);
  });

  it('refuses a publish to another topic, a subscription and non-JSON; a goodbye closes the channel and a new hello opens another', async () => {
    const device = await boot('aa:bb:cc:10:00:07');
    await device.connect();
    const hello = await device.openAudioChannel();
    const sessions = server.audioSessions;
    await device.goodbye();
    await waitFor(() => server.audioSessions === sessions - 1);
    const again = await device.openAudioChannel();
    expect(again.udp.key).not.toBe(hello.udp.key);
    const notJson = await metric('mqtt_not_json');
    await device.publish('not json');
    await waitFor(async () => (await metric('mqtt_not_json')) === notJson + 1);
    expect(device.mqtt!.connected).toBe(true);

    const topic = await metric('mqtt_refused_topic');
    const closed = new Promise((resolve) => device.mqtt!.once('close', () => resolve(undefined)));
    await device.publish('{"type":"listen","state":"start"}', 'xiaozhi/aa:bb:cc:10:00:01/up');
    await closed;
    expect(await metric('mqtt_refused_topic')).toBe(topic + 1);
    await waitFor(() => server.audioSessions === sessions - 1);

    const subscriber = await boot('aa:bb:cc:10:00:08');
    await subscriber.connect();
    const refused = await subscriber.mqtt!.subscribeAsync('xiaozhi/#').then(
      (granted) => granted.every((grant) => grant.qos === 128),
      () => true,
    );
    expect(refused).toBe(true);
  });

  it('answers bad messages with an alert; a hello it cannot serve gets a goodbye of its own and the MQTT connection ends', async () => {
    const device = await boot('aa:bb:cc:10:00:09');
    await device.connect();
    await device.openAudioChannel();
    await device.publish(`{"session_id":"${device.sessionId}","type":"listen","state":"start","mode":"bogus"}`);
    expect(await device.next<any>('alert')).toMatchObject({ status: 'error', message: expect.stringMatching(/mode/) });
    await device.publish('{"type":"hello","transport":"websocket"}');
    expect(await device.next<any>('alert')).toMatchObject({ message: expect.stringMatching(/transport must be "udp"/) });

    const unsupported = await boot('aa:bb:cc:10:00:0a');
    await unsupported.connect();
    const closed = new Promise((resolve) => unsupported.mqtt!.once('close', () => resolve(undefined)));
    await unsupported.publish(
      '{"type":"hello","version":3,"transport":"udp","audio_params":{"format":"opus","sample_rate":8000,"channels":1,"frame_duration":60}}',
    );
    expect(await unsupported.next<any>('alert')).toMatchObject({ status: 'error' });
    const goodbye = await unsupported.next<any>('goodbye');
    expect(goodbye.session_id).toEqual(expect.any(String));
    await closed;
  });
});
