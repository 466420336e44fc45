import { createServer, IncomingHttpHeaders, Server } from 'http';
import { AddressInfo } from 'net';
import { OpusDecoder } from '../../../src/assistant/audio/opus-decoder';
import { OpusEncoder } from '../../../src/assistant/audio/opus-encoder';
import { OpusSampleRate } from '../../../src/assistant/audio/opus-format';
import { freePort } from '../ports';
import { encodeFrame } from './framing';
import { ScriptedConnection, ScriptedXiaozhiServer } from './scripted-xiaozhi-server';
import { XiaozhiConnectionError, XiaozhiDevice, XiaozhiDeviceOptions } from './xiaozhi-device';

/** 60 ms Opus packets of a tone, as a microphone (16 kHz) or a server's speech (24 kHz) would carry. */
function tonePackets(count: number, sampleRate: OpusSampleRate): Uint8Array[] {
  const encoder = new OpusEncoder({ sampleRate, frameDurationMs: 60 });
  const packets = Array.from({ length: count }, (_, index) => {
    const frame = new Int16Array(encoder.frameSamples);
    for (let sample = 0; sample < frame.length; sample++)
      frame[sample] = Math.round(8000 * Math.sin((2 * Math.PI * 440 * (index * frame.length + sample)) / sampleRate));
    return encoder.encode(frame).slice();
  });
  encoder.free();
  return packets;
}

const SESSION = '{"session_id":"session-1",';

describe('xiaozhi device simulator', () => {
  let server: ScriptedXiaozhiServer;
  const devices: XiaozhiDevice[] = [];
  const downlink = tonePackets(60, 24_000);
  const uplink = tonePackets(20, 16_000);

  beforeAll(async () => {
    server = await ScriptedXiaozhiServer.start();
  });
  afterEach(async () => {
    await Promise.all(devices.splice(0).map((device) => device.close()));
  });
  afterAll(() => server.close());

  function newDevice(options: XiaozhiDeviceOptions = {}): XiaozhiDevice {
    const device = new XiaozhiDevice(options);
    devices.push(device);
    return device;
  }

  async function connected(options: XiaozhiDeviceOptions = {}): Promise<{ device: XiaozhiDevice; connection: ScriptedConnection }> {
    const device = newDevice(options);
    const connecting = device.connect(server.url, 'token-1');
    const connection = await server.nextConnection();
    await connection.nextText();
    connection.hello();
    await connecting;
    return { device, connection };
  }

  describe('configuration and connection', () => {
    let ota: Server;
    let requests: { method?: string; url?: string; headers: IncomingHttpHeaders; body: string }[];
    let answer: unknown;

    beforeAll(async () => {
      ota = createServer((request, response) => {
        let body = '';
        request.on('data', (chunk: Buffer) => (body += chunk.toString()));
        request.on('end', () => {
          requests.push({ method: request.method, url: request.url, headers: request.headers, body });
          response.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(answer));
        });
      });
      await new Promise<void>((resolve) => ota.listen(0, '127.0.0.1', resolve));
    });
    beforeEach(() => {
      requests = [];
      answer = { websocket: { url: server.url, token: 'ota-token', version: 3 }, server_time: { timestamp: Date.now(), timezone_offset: 480 } };
    });
    afterAll(() => new Promise<void>((resolve) => ota.close(() => resolve())));

    const otaUrl = () => `http://127.0.0.1:${(ota.address() as AddressInfo).port}/xiaozhi/ota/`;

    it('posts its system information with the firmware headers, then connects with the stored url, token and version', async () => {
      const device = newDevice({ deviceId: 'aa:bb:cc:dd:ee:ff', clientId: '0b6f3a52-9a4e-4f0e-8d3c-2f1a7c9e5b11' });
      const reply = await device.requestConfiguration(otaUrl());
      expect(reply.status).toBe(200);
      const [request] = requests;
      expect(request).toMatchObject({ method: 'POST', url: '/xiaozhi/ota/' });
      expect(request.headers).toMatchObject({
        'activation-version': '1',
        'device-id': 'aa:bb:cc:dd:ee:ff',
        'client-id': '0b6f3a52-9a4e-4f0e-8d3c-2f1a7c9e5b11',
        'user-agent': 'bread-compact-wifi/2.4.2',
        'accept-language': 'zh-CN',
        'content-type': 'application/json',
      });
      expect(request.body).toContain('"minimum_free_heap_size":"');
      expect(request.body).toContain('"partition_table": [');
      expect(JSON.parse(request.body)).toMatchObject({
        version: 2,
        language: 'zh-CN',
        mac_address: 'aa:bb:cc:dd:ee:ff',
        uuid: '0b6f3a52-9a4e-4f0e-8d3c-2f1a7c9e5b11',
        application: { name: 'xiaozhi', version: '2.4.2' },
        board: { type: 'bread-compact-wifi', mac: 'aa:bb:cc:dd:ee:ff' },
      });
      expect(device.configuration.websocket).toEqual({ url: server.url, token: 'ota-token', version: 3 });

      const connecting = device.connect();
      const connection = await server.nextConnection();
      expect(connection.path).toBe('/xiaozhi/v1/');
      expect(connection.headers).toMatchObject({
        host: '127.0.0.1',
        authorization: 'Bearer ota-token',
        'protocol-version': '3',
        'device-id': 'aa:bb:cc:dd:ee:ff',
        'client-id': '0b6f3a52-9a4e-4f0e-8d3c-2f1a7c9e5b11',
      });
      expect(connection.headers).not.toHaveProperty('sec-websocket-extensions');
      expect(await connection.nextText()).toBe(
        '{"type":"hello","version":3,"features":{"mcp":true,"glyph_push":true},"text_font":{"bundle":"noto-v1","charset":"basic","size":14,"bpp":1},' +
          '"transport":"websocket","audio_params":{"format":"opus","sample_rate":16000,"channels":1,"frame_duration":60}}',
      );
      connection.hello({ audio_params: { format: 'opus', sample_rate: 16000, channels: 1, frame_duration: 60 } });
      await expect(connecting).resolves.toMatchObject({ sessionId: 'session-1', sampleRate: 16000, frameDurationMs: 60 });
      expect(device.connected).toBe(true);
      expect(device.state).toBe('idle');
    });

    it('asks with GET and no body, keeps a token that has a space as it is, and says Activation-Version 2 with a serial number', async () => {
      answer = { websocket: { url: server.url, token: 'Token abc' } };
      const device = newDevice({ serialNumber: 'SN-0042', textFont: null });
      await device.requestConfiguration(otaUrl(), 'GET');
      expect(requests[0]).toMatchObject({ method: 'GET', body: '' });
      expect(requests[0].headers).toMatchObject({ 'activation-version': '2', 'serial-number': 'SN-0042' });
      const connecting = device.connect();
      const connection = await server.nextConnection();
      expect(connection.headers).toMatchObject({ authorization: 'Token abc', 'protocol-version': '1' });
      expect(await connection.nextJson()).toMatchObject({ version: 1, features: { mcp: true, glyph_push: false } });
      connection.hello();
      await connecting;
    });

    it('will not use the WebSocket when the answer has an mqtt section', async () => {
      answer = { websocket: { url: server.url }, mqtt: { endpoint: 'mqtt.example:8883', client_id: 'x' } };
      const device = newDevice();
      await device.requestConfiguration(otaUrl());
      await expect(device.connect()).rejects.toThrow(/MQTT/);
    });
  });

  describe('connection errors', () => {
    it('times out when no hello comes, ignoring a hello for another transport', async () => {
      const device = newDevice({ helloTimeoutMs: 300 });
      const connecting = device.connect(server.url);
      const connection = await server.nextConnection();
      connection.hello({ transport: 'udp' });
      await expect(connecting).rejects.toMatchObject({ reason: 'hello-timeout' });
      expect(device.state).toBe('idle');
      expect(device.connected).toBe(false);
    });

    it('records the crash a hello without transport causes, and drops the connection', async () => {
      const device = newDevice();
      const connecting = device.connect(server.url);
      const connection = await server.nextConnection();
      connection.send({ type: 'hello', session_id: 'x' });
      const error = await connecting.catch((failure: unknown) => failure);
      expect(error).toBeInstanceOf(XiaozhiConnectionError);
      expect(error).toMatchObject({ reason: 'crashed' });
      expect(device.crash).toMatch(/transport/);
    });

    it('reports a server that does not listen', async () => {
      const device = newDevice();
      await expect(device.connect(`ws://127.0.0.1:${await freePort()}/`)).rejects.toMatchObject({ reason: 'not-connected' });
      expect(device.state).toBe('idle');
    });
  });

  describe('a conversation', () => {
    it('in auto mode stops the microphone at tts start, plays the answer and sends listen start again once it has played', async () => {
      const { device, connection } = await connected();
      device.listen('auto');
      expect(await connection.nextText()).toBe(`${SESSION}"type":"listen","state":"start","mode":"auto"}`);
      const speaking = device.sendAudio(uplink);
      await connection.nextBinary();
      await connection.nextBinary();
      connection.send({ session_id: 'session-1', type: 'stt', text: 'what time is it' });
      connection.send({ session_id: 'session-1', type: 'llm', emotion: 'happy', text: '😀' });
      connection.send({ session_id: 'session-1', type: 'tts', state: 'start' });
      connection.send({ session_id: 'session-1', type: 'tts', state: 'sentence_start', text: 'It is noon.' });
      for (const packet of downlink.slice(0, 10)) connection.sendBinary(packet);
      connection.send({ session_id: 'session-1', type: 'tts', state: 'stop' });
      const stop = await device.next('tts', (message) => message.state === 'stop');
      expect(stop.state).toBe('stop');
      const ttsStartAt = device.turns[0].startedAtMs;

      expect(await connection.nextText()).toBe(`${SESSION}"type":"listen","state":"start","mode":"auto"}`);
      const relistenedAt = device.nowMs();
      expect(relistenedAt - ttsStartAt).toBeGreaterThanOrEqual(580);
      const { sent, withheld } = await speaking;
      expect(withheld).toBeGreaterThan(0);
      expect(sent + withheld).toBe(uplink.length);

      expect(device.sttTexts).toEqual(['what time is it']);
      expect(device.emotions).toEqual(['happy']);
      expect(device.turns).toHaveLength(1);
      expect(device.turns[0].sentences.map((sentence) => [sentence.text, sentence.packets.length])).toEqual([['It is noon.', 10]]);
      expect(device.audioStats()).toMatchObject({ received: 10, played: 10 });
      expect(device.playedDurationMs()).toBeCloseTo(600);
      expect(device.playedPcm()).toHaveLength(10 * 1440);
      expect(device.state).toBe('listening');
    });

    it('in manual mode sends listen stop, and goes idle without a word after tts stop', async () => {
      const { device, connection } = await connected();
      device.listen('manual');
      expect(await connection.nextText()).toBe(`${SESSION}"type":"listen","state":"start","mode":"manual"}`);
      await device.sendAudio(uplink.slice(0, 3), { paced: false });
      device.stopListening();
      expect(await connection.nextText()).toBe(`${SESSION}"type":"listen","state":"stop"}`);
      expect(device.state).toBe('idle');
      connection.send({ type: 'tts', state: 'start' });
      connection.sendBinary(downlink[0]);
      connection.send({ type: 'tts', state: 'stop' });
      await device.next('tts', (message) => message.state === 'stop');
      expect(device.state).toBe('idle');
      expect(await connection.quietText(300)).toBeUndefined();
      expect(connection.pendingBinaryCount()).toBe(3);
    });

    it('in realtime mode keeps the microphone open while speaking and sends no new listen start after it', async () => {
      const { device, connection } = await connected({ aec: 'device' });
      device.listen('realtime');
      expect(await connection.nextJson()).toMatchObject({ mode: 'realtime' });
      connection.send({ type: 'tts', state: 'start' });
      await device.waitForState('speaking');
      expect(await device.sendAudio(uplink.slice(0, 3), { paced: false })).toEqual({ sent: 3, withheld: 0 });
      connection.send({ type: 'tts', state: 'stop' });
      await device.waitForState('listening');
      expect(device.microphoneOpen).toBe(true);
      expect(await connection.quietText(300)).toBeUndefined();
    });

    it('drops audio that comes while it is not speaking, and audio beyond its 2.4 s decode queue', async () => {
      const { device, connection } = await connected();
      device.listen('auto');
      await connection.nextText();
      for (const packet of downlink.slice(0, 3)) connection.sendBinary(packet);
      connection.send({ type: 'tts', state: 'start' });
      for (const packet of downlink) connection.sendBinary(packet);
      connection.send({ type: 'tts', state: 'stop' });
      await device.next('tts', (message) => message.state === 'stop');
      const stats = device.audioStats();
      expect(stats.droppedNotSpeaking).toBe(3);
      expect(stats.played).toBeGreaterThanOrEqual(43);
      expect(stats.played).toBeLessThanOrEqual(46);
      expect(stats.played + stats.droppedQueueFull).toBe(downlink.length);
    });

    it('on a wake word sends its audio, detect and listen start when idle; abort and listen start while speaking', async () => {
      const { device, connection } = await connected();
      device.detect('你好小智', uplink.slice(0, 2));
      expect(await connection.nextText()).toBe(`${SESSION}"type":"listen","state":"detect","text":"你好小智"}`);
      expect(await connection.nextText()).toBe(`${SESSION}"type":"listen","state":"start","mode":"auto"}`);
      expect(connection.pendingBinaryCount()).toBe(2);

      connection.send({ type: 'tts', state: 'start' });
      connection.sendBinary(downlink[0]);
      await device.waitForState('speaking');
      device.detect('你好小智');
      expect(await connection.nextText()).toBe(`${SESSION}"type":"abort","reason":"wake_word_detected"}`);
      expect(await connection.nextText()).toBe(`${SESSION}"type":"listen","state":"start","mode":"auto"}`);
      expect(device.state).toBe('listening');
    });

    it('says espeak-ng speech into its microphone as 16 kHz, 60 ms Opus packets', async () => {
      const { device, connection } = await connected();
      device.listen('manual');
      await connection.nextText();
      const { sent, withheld } = await device.say('turn on the light', { paced: false, beforeMs: 60, afterMs: 60 });
      expect(withheld).toBe(0);
      expect(sent).toBeGreaterThan(10);
      const decoder = new OpusDecoder(16_000);
      expect(decoder.decode(await connection.nextBinary())).toHaveLength(960);
      decoder.free();
      expect(connection.pendingBinaryCount()).toBe(sent - 1);
    });

    it('aborts with and without a reason', async () => {
      const { device, connection } = await connected();
      device.abort();
      device.abort('wake_word_detected');
      expect(await connection.nextText()).toBe(`${SESSION}"type":"abort"}`);
      expect(await connection.nextText()).toBe(`${SESSION}"type":"abort","reason":"wake_word_detected"}`);
    });

    it('frames version 2 audio and, built for server-side echo cancellation, stamps the microphone with played timestamps', async () => {
      const { device, connection } = await connected({ protocolVersion: 2, aec: 'server' });
      device.listen('realtime');
      expect(await connection.nextJson()).toMatchObject({ mode: 'realtime' });
      connection.send({ type: 'tts', state: 'start' });
      await device.waitForState('speaking');
      connection.sendBinary(encodeFrame(2, downlink[0], { timestamp: 1234 }));
      await new Promise((resolve) => setTimeout(resolve, 150));
      await device.sendAudio(uplink.slice(0, 2), { paced: false });
      const first = await connection.nextBinary();
      const second = await connection.nextBinary();
      expect([...first.subarray(0, 16)]).toEqual([
        0,
        2,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0x04,
        0xd2,
        ...[0, 0, (uplink[0].length >> 8) & 0xff, uplink[0].length & 0xff],
      ]);
      expect(first.subarray(16)).toEqual(Buffer.from(uplink[0]));
      expect(second.readUInt32BE(8)).toBe(0);
      expect(device.audioStats()).toMatchObject({ received: 1, played: 1 });
    });

    it('counts version 3 frames that say more than they carry as malformed', async () => {
      const { device, connection } = await connected({ protocolVersion: 3 });
      connection.send({ type: 'tts', state: 'start' });
      connection.sendBinary(Buffer.from([0, 0, 0, 200, 1, 2, 3]));
      connection.sendBinary(encodeFrame(3, downlink[0]));
      connection.send({ type: 'tts', state: 'stop' });
      await device.next('tts', (message) => message.state === 'stop');
      expect(device.audioStats()).toMatchObject({ received: 1, played: 1, malformed: 1 });
    });

    it('treats a close by the server as the end of the channel', async () => {
      const { device, connection } = await connected();
      device.listen('auto');
      connection.socket.close(1000, 'bye');
      expect(await device.waitForClose()).toMatchObject({ code: 1000, reason: 'bye' });
      expect(device.state).toBe('idle');
      expect(device.connected).toBe(false);
    });
  });
});
