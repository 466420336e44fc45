/** @jest-environment ./test/support/native-typed-arrays.environment.js */
import { settledMemory } from '../support/settled-memory';
import { Logger } from '@nestjs/common';
import { randomBytes } from 'crypto';
import { ConnectionRegistry } from '../../src/core/ws/connection-registry';
import type { VoiceEvent } from '../../src/metrics/metrics.service';
import type { XiaozhiConnection } from '../../src/xiaozhi/xiaozhi-connection';
import { sine } from '../support/scripted-speech-server';
import { speechAt16k, uplinkPackets } from '../support/speech-packets';
import { refusal, TestSocket } from '../support/test-socket';
import { encodeFrame } from '../support/xiaozhi/framing';
import { RawXiaozhiSocket } from '../support/xiaozhi/raw-xiaozhi-socket';
import { XiaozhiDevice } from '../support/xiaozhi/xiaozhi-device';
import { DEVICE_TOKEN, startXiaozhiStack, XiaozhiStack } from '../support/xiaozhi/xiaozhi-stack';

const OUTPUT_RATE = 24_000;
/** WAV answers of the recognizer's uploads: a 44-byte header, then 16 kHz 16-bit mono. */
const WAV_HEADER_BYTES = 44;
const UPLINK_BYTES_PER_SECOND = 16_000 * 2;
/** What the stack is started with: short engine and tool deadlines, so failures show at once, and a 2 s utterance limit. */
const SETTINGS = {
  VOICE_MAX_UTTERANCE_S: 2,
  CLIENT_TOOL_TIMEOUT: 1,
  STT_TIMEOUT: 1.5,
  TTS_TIMEOUT: 1,
  // WAV answers, so a synthesizer's garbage can be told from sound (raw PCM is any bytes at all).
  TTS_FORMAT: 'wav',
} as const;
const agent = { Authorization: `Bearer ${DEVICE_TOKEN}`, 'Content-Type': 'application/json' };
const halfSecond = () => ({ samples: sine(440, 0.5, OUTPUT_RATE) });

/**
 * What a broken, hostile or confused xiaozhi device (or something pretending to be one) can send
 * the gateway, each answered clearly, in the protocol's words (an `alert`) or the documented HTTP
 * status or close code; counted in `gateway_voice_events_total`; without an error logged or a
 * rejection unhandled; and, where the protocol lets the session go on, followed by a spoken turn
 * that still works.
 */
describe('xiaozhi devices that send what they should not', () => {
  let stack: XiaozhiStack;
  /** "hello there", as a device's microphone sends it: a short utterance for the turns that show a session still works. */
  let shortSpeech: Uint8Array[];
  /** More than 5 s of speech without a pause. */
  let longSpeech: Uint8Array[];
  /** Devices made here rather than by `stack.device`, closed at the end. */
  const ownDevices: XiaozhiDevice[] = [];
  const errorsLogged: string[] = [];
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);
  let deviceCount = 0;

  beforeAll(async () => {
    [stack, shortSpeech, longSpeech] = await Promise.all([
      startXiaozhiStack(SETTINGS, { proxiedEngines: true }),
      speechAt16k('hello there').then((speech) => uplinkPackets(speech, 100, 300).packets),
      speechAt16k('the quick brown fox jumps over the lazy dog and keeps on running around the old red barn all afternoon long').then(
        (speech) => uplinkPackets(speech, 0, 0).packets,
      ),
    ]);
    jest.spyOn(Logger.prototype, 'error').mockImplementation((message: unknown) => void errorsLogged.push(String(message)));
    process.on('unhandledRejection', onUnhandled);
  });

  afterEach(async () => {
    stack.llm.reset();
    stack.stt.reset();
    stack.tts.reset();
    stack.sttProxy?.restore();
    stack.ttsProxy?.restore();
    // Nothing crashed: no error logged, no rejection left unhandled, and the gateway still answers.
    expect(errorsLogged.splice(0)).toEqual([]);
    expect(unhandled.splice(0)).toEqual([]);
    expect((await fetch(stack.gateway.http('/metrics'), { headers: agent })).status).toBe(200);
  });

  afterAll(async () => {
    process.off('unhandledRejection', onUnhandled);
    jest.restoreAllMocks();
    await Promise.all(ownDevices.map((device) => device.close()));
    await stack?.close();
  });

  it('drops audio sent before the hello, counts it, and serves the device once it says hello', async () => {
    const before = await voiceEvents();
    const socket = await RawXiaozhiSocket.open(stack.gateway.ws('/xiaozhi/v1/'), { token: DEVICE_TOKEN, deviceId: nextDeviceId(), protocolVersion: 1 });
    try {
      for (const packet of shortSpeech.slice(0, 5)) socket.sendBinary(packet);
      socket.sendText({
        type: 'hello',
        version: 1,
        transport: 'websocket',
        audio_params: { format: 'opus', sample_rate: 16000, channels: 1, frame_duration: 60 },
      });
      const hello = await socket.next('hello');
      expect(hello).toMatchObject({ transport: 'websocket', session_id: expect.any(String), audio_params: { sample_rate: OUTPUT_RATE } });
      expect(await eventsSince(before)).toEqual({ audio_before_hello: 5 });
      // A manual turn on the same socket: heard, answered, spoken.
      stack.stt.reply({ text: 'hello there' });
      stack.llm.reply({ text: 'Hi.' });
      stack.tts.reply(halfSecond());
      socket.sendText({ session_id: hello.session_id, type: 'listen', state: 'start', mode: 'manual' });
      for (const packet of shortSpeech) socket.sendBinary(packet);
      socket.sendText({ session_id: hello.session_id, type: 'listen', state: 'stop' });
      expect(await socket.next('stt')).toMatchObject({ text: 'hello there' });
      await socket.next('tts', (message) => message.state === 'stop');
      expect(socket.binaryFrames).toBeGreaterThanOrEqual(9);
    } finally {
      await socket.close();
    }
  });

  it('answers a hello for audio it cannot hear (48 kHz, 25 ms frames, PCM, stereo) with an alert and a 1003 close', async () => {
    for (const [audio, problem] of [
      [{ sampleRate: 48_000 }, /16000 Hz/],
      [{ frameDurationMs: 25 }, /25 ms/],
    ] as const) {
      const device = track(new XiaozhiDevice({ deviceId: nextDeviceId(), audio }));
      await device.requestConfiguration(stack.gateway.http('/xiaozhi/ota/'));
      await expect(device.connect()).rejects.toMatchObject({ reason: 'closed' });
      expect(await device.next('alert')).toMatchObject({ status: 'error', message: expect.stringMatching(problem) });
      expect(device.closeEvent?.code).toBe(1003);
      expect(device.messages.map((received) => received.message.type)).toEqual(['alert']);
    }
    // The firmware always says opus and mono; a hello that does not is refused by its schema, and closed the same way.
    for (const [audioParams, problem] of [
      [{ format: 'pcm', sample_rate: 16000, channels: 1, frame_duration: 60 }, 'audio_params.format must be "opus"'],
      [{ format: 'opus', sample_rate: 16000, channels: 2, frame_duration: 60 }, 'audio_params.channels must be 1'],
    ] as const) {
      const socket = await RawXiaozhiSocket.open(stack.gateway.ws('/xiaozhi/v1/'), { token: DEVICE_TOKEN, deviceId: nextDeviceId() });
      socket.sendText({ type: 'hello', version: 1, transport: 'websocket', audio_params: audioParams });
      expect(await socket.next('alert')).toMatchObject({ status: 'error', message: problem });
      expect(await socket.closed).toMatchObject({ code: 1003, reason: problem });
      expect(socket.inbox.received.map((received) => received.message.type)).toEqual(['alert']);
    }
  });

  it('refuses what comes before the hello, and closes a socket that sends none within 10 s with 1008', async () => {
    const socket = await RawXiaozhiSocket.open(stack.gateway.ws('/xiaozhi/v1/'), { token: DEVICE_TOKEN, deviceId: nextDeviceId() });
    const openedAt = performance.now();
    socket.sendText({ type: 'listen', state: 'start', mode: 'auto' });
    socket.sendText({ type: 'abort' });
    expect(await socket.next('alert')).toMatchObject({ status: 'error', message: 'Send hello before listen' });
    expect(await socket.next('alert')).toMatchObject({ status: 'error', message: 'Send hello before abort' });
    const closed = await socket.closed;
    expect(closed).toMatchObject({ code: 1008, reason: 'No hello within 10 s' });
    expect(closed.atMs - openedAt).toBeGreaterThan(9_500);
  }, 20_000);

  it('refuses an upgrade without Device-Id or with Protocol-Version 7 (400), with a wrong token (403) or none (401)', async () => {
    const before = await metrics();
    const url = stack.gateway.ws('/xiaozhi/v1/');
    const deviceId = nextDeviceId();
    const open = (headers: Record<string, string>) => TestSocket.open(url, { headers });
    const noDeviceId = await refusal(open({ Authorization: `Bearer ${DEVICE_TOKEN}`, 'Protocol-Version': '1' }));
    expect(noDeviceId.status).toBe(400);
    expect(noDeviceId.body).toMatch(/Device-Id/);
    const version7 = await refusal(open({ Authorization: `Bearer ${DEVICE_TOKEN}`, 'Device-Id': deviceId, 'Protocol-Version': '7' }));
    expect(version7.status).toBe(400);
    expect(version7.body).toMatch(/Protocol-Version 7/);
    // A token that is not one of AUTH_TOKENS is refused 403 ('Invalid token'); no token at all, 401 with a challenge.
    const wrongToken = await refusal(open({ Authorization: 'Bearer not-the-token', 'Device-Id': deviceId }));
    expect(wrongToken.status).toBe(403);
    expect(wrongToken.body).toMatch(/Invalid token/);
    const noToken = await refusal(open({ 'Device-Id': deviceId }));
    expect(noToken.status).toBe(401);
    expect(noToken.headers['www-authenticate']).toMatch(/^Bearer/);
    const after = await metrics();
    expect(
      metricValue(after, 'gateway_refused_connections_total', { reason: 'other' }) -
        metricValue(before, 'gateway_refused_connections_total', { reason: 'other' }),
    ).toBe(2);
    expect(
      metricValue(after, 'gateway_refused_connections_total', { reason: 'auth' }) -
        metricValue(before, 'gateway_refused_connections_total', { reason: 'auth' }),
    ).toBe(2);
    // The device id was never taken: it connects properly now.
    const device = await stack.device({ deviceId });
    expect(device.connected).toBe(true);
  });

  it('counts packets that are not Opus and goes on hearing the device', async () => {
    const device = await stack.device({ deviceId: nextDeviceId() });
    const before = await voiceEvents();
    // Random bytes behind a code-3 TOC byte that announces 0 frames (libopus: invalid packet), an empty packet, and one over Opus's 1275 bytes.
    const garbage = Array.from({ length: 30 }, () => Uint8Array.from([(randomBytes(1)[0] & 0xfc) | 0x03, 0x00, ...randomBytes(40)]));
    garbage.push(new Uint8Array(0), Uint8Array.from(randomBytes(2000)));
    device.listen('manual');
    await device.sendAudio(garbage, { paced: false });
    device.stopListening();
    await waitFor(async () => (await eventsSince(before)).audio_undecodable === 32);
    expect(await eventsSince(before)).toEqual({ audio_undecodable: 32 });
    expect(stack.stt.requests).toHaveLength(0);
    // Refused packets spent the audio budget as any packet does: the turn below speaks at 1.5 times real time, within it.
    await expectSpokenTurn(device);
  });

  it('closes a device that sends a binary message over CLOUD_MAX_MESSAGE_SIZE with 1009, and takes it back when it reconnects', async () => {
    const device = await stack.device({ deviceId: nextDeviceId() });
    device.sendRaw(new Uint8Array(1_048_576 + 1));
    expect(await device.waitForClose()).toMatchObject({ code: 1009 });
    await waitFor(async () => (await fetch(stack.gateway.http(`/devices/${device.identity.deviceId}`), { headers: agent })).status === 404);
    await device.connect();
    await expectSpokenTurn(device);
  });

  it('counts version 2 and 3 frames whose header lies about their payload, and hears honest frames', async () => {
    for (const version of [2, 3] as const) {
      const device = await stack.device({ deviceId: nextDeviceId(), protocolVersion: version });
      const before = await voiceEvents();
      const packet = shortSpeech[5];
      const header = version === 2 ? 16 : 4;
      const sizeAt = version === 2 ? 12 : 2;
      const honest = encodeFrame(version, packet);
      const longer = Buffer.from(honest);
      if (version === 2) longer.writeUInt32BE(packet.length + 50, sizeAt);
      else longer.writeUInt16BE(packet.length + 50, sizeAt);
      const shorter = Buffer.from(honest);
      if (version === 2) shorter.writeUInt32BE(packet.length - 10, sizeAt);
      else shorter.writeUInt16BE(packet.length - 10, sizeAt);
      const notOpus = encodeFrame(version, packet, { type: 1 });
      const truncatedHeader = honest.subarray(0, header - 1);
      for (const frame of [longer, shorter, notOpus, truncatedHeader]) device.sendRaw(frame);
      await waitFor(async () => (await eventsSince(before)).audio_bad_frame === 4);
      expect(await eventsSince(before)).toEqual({ audio_bad_frame: 4 });
      await expectSpokenTurn(device);
      expect(device.audioStats().malformed).toBe(0);
    }
  });

  it('refuses audio beyond twice real time after a 2 s burst, keeps memory bounded, and hears the device once it slows down', async () => {
    const device = await stack.device({ deviceId: nextDeviceId() });
    // One packet of silence, 2000 times (encoding 2000 would hold the event loop for seconds: the gateway runs in this process).
    const flood: Uint8Array[] = new Array(2000).fill(silence(1)[0]);
    device.listen('manual');
    const before = await voiceEvents();
    const memoryBefore = settledMemory();
    await device.sendAudio(flood, { paced: false });
    device.stopListening();
    await waitFor(async () => ((await eventsSince(before)).audio_over_budget ?? 0) >= 1900);
    await sleep(200);
    const events = await eventsSince(before);
    // About 2 s of the 120 s sent is taken (33 packets, and what the budget refills while the flood arrives); the rest is refused undecoded.
    expect(events.audio_over_budget).toBeGreaterThanOrEqual(1900);
    expect(events.audio_over_budget).toBeLessThanOrEqual(2000 - 33);
    // The 2 s taken are a manual utterance as long as VOICE_MAX_UTTERANCE_S: it ends there (silence: the recognizer is not asked).
    expect(Object.keys(events).filter((event) => event !== 'audio_over_budget' && event !== 'utterance_max_length')).toEqual([]);
    expect(stack.stt.requests).toHaveLength(0);
    const grown = settledMemory() - memoryBefore;
    expect(grown).toBeLessThan(4 * 1024 * 1024);
    // The budget refills at twice real time: a second later a normal utterance passes.
    await sleep(1000);
    await expectSpokenTurn(device);
  });

  it('ends an utterance at VOICE_MAX_UTTERANCE_S and sends the recognizer no more than that', async () => {
    const device = await stack.device({ deviceId: nextDeviceId() });
    const fiveSeconds = longSpeech.slice(0, Math.ceil(5000 / 60));
    expect(fiveSeconds).toHaveLength(84);
    stack.stt.reply({ text: 'the quick brown fox' });
    // The answer begins once the device has said all of it: until then it keeps its microphone open, as the firmware does.
    stack.llm.reply({ text: 'A fox indeed.', delayMs: 3500 });
    stack.tts.reply(halfSecond());
    const before = await voiceEvents();
    device.listen('auto');
    const speaking = device.sendAudio(fiveSeconds);
    expect(await device.next('stt', undefined, 6000)).toMatchObject({ text: 'the quick brown fox' });
    expect(await speaking).toEqual({ sent: 84, withheld: 0 });
    await device.next('tts', (message: any) => message.state === 'stop', 5000);
    const events = await eventsSince(before);
    expect(events.utterance_max_length).toBe(1);
    // What came after the limit, while the utterance was being answered, was dropped as the tail an
    // auto-mode device sends until `tts start`: expected, so not counted as audio nobody listened to.
    expect(events.audio_not_listening).toBeUndefined();
    expect(stack.stt.requests).toHaveLength(1);
    const wavBytes = stack.stt.requests[0].file.bytes.length;
    expect(wavBytes).toBeLessThanOrEqual(WAV_HEADER_BYTES + 2 * UPLINK_BYTES_PER_SECOND);
    expect(wavBytes).toBeGreaterThan(WAV_HEADER_BYTES + 1.8 * UPLINK_BYTES_PER_SECOND);
  });

  it('answers listen stop without a listen start with an alert, and goes on', async () => {
    const device = await stack.device({ deviceId: nextDeviceId() });
    const before = await metrics();
    device.sendRaw(`{"session_id":"${device.sessionId}","type":"listen","state":"stop"}`);
    expect(await device.next('alert')).toMatchObject({ status: 'error', message: 'listen stop without a listen start', emotion: 'confused' });
    expect(
      metricValue(await metrics(), 'gateway_frames_total', { protocol: 'xiaozhi', outcome: 'error' }) -
        metricValue(before, 'gateway_frames_total', { protocol: 'xiaozhi', outcome: 'error' }),
    ).toBe(1);
    expect(device.connected).toBe(true);
    await expectSpokenTurn(device);
  });

  it('answers each message it does not know with an alert, and keeps the connection', async () => {
    const device = await stack.device({ deviceId: nextDeviceId(), features: { mcp: false } });
    const session = device.sessionId;
    const cases: [string, RegExp][] = [
      [`{"session_id":"${session}","type":"dance"}`, /Unknown message type "dance"/],
      ['this is not JSON {', /Invalid JSON/],
      [`{"session_id":"${session}","state":"start"}`, /JSON object with a string "type"/],
      ['[1,2,3]', /JSON object with a string "type"/],
      [`{"session_id":"${session}","type":"listen","state":"sing"}`, /state must be "start", "stop" or "detect"/],
      [`{"session_id":"${session}","type":"listen"}`, /listen needs a state/],
      [`{"session_id":"${session}","type":"listen","state":"start","mode":"shout"}`, /mode must be/],
      [`{"session_id":"${session}","type":"mcp","payload":{"jsonrpc":"2.0","id":1,"result":{}}}`, /features\.mcp/],
      [`{"session_id":"${session}","type":"mcp","payload":[1]}`, /payload must be/],
    ];
    const before = await metrics();
    for (const [text, message] of cases) {
      device.sendRaw(text);
      expect(await device.next('alert')).toMatchObject({ status: 'error', message: expect.stringMatching(message) });
    }
    expect(
      metricValue(await metrics(), 'gateway_frames_total', { protocol: 'xiaozhi', outcome: 'error' }) -
        metricValue(before, 'gateway_frames_total', { protocol: 'xiaozhi', outcome: 'error' }),
    ).toBe(cases.length);
    expect(device.connected).toBe(true);
    await expectSpokenTurn(device);
  });

  it('answers a burst of 200 unknown messages with 200 alerts, keeps the connection and memory bounded', async () => {
    const device = await stack.device({ deviceId: nextDeviceId() });
    const memoryBefore = settledMemory();
    for (let index = 0; index < 200; index++) device.sendRaw(`{"session_id":"${device.sessionId}","type":"dance","step":${index}}`);
    await waitFor(async () => device.alerts.length >= 200);
    await sleep(100);
    expect(device.alerts).toHaveLength(200);
    expect(new Set(device.alerts.map((alert) => alert.message))).toEqual(new Set(['Unknown message type "dance"']));
    expect(settledMemory() - memoryBefore).toBeLessThan(4 * 1024 * 1024);
    expect(device.connected).toBe(true);
    await expectSpokenTurn(device);
  });

  describe("the device's MCP tools", () => {
    it('counts an answer with an id no request waits for; the call it should have answered times out, and nothing waits', async () => {
      const device = await stack.device({ deviceId: nextDeviceId(), features: { mcp: true }, mcp: { misbehave: { wrongIdFor: ['tools/call'] } } });
      await waitFor(async () => (await listedTools(device)).includes('self_audio_speaker_set_volume'));
      const before = await voiceEvents();
      const call = await callTool(device, 'self_audio_speaker_set_volume', { volume: 10 });
      expect(call.status).toBe(504);
      expect(call.body.error).toMatchObject({ code: 'TOOL_TIMEOUT' });
      expect(await eventsSince(before)).toEqual({ device_mcp_unknown_id: 1 });
      // The device did run it (its answer only named the wrong request).
      expect(device.board.volume).toBe(10);
      expect(connectionOf(device).state.mcp?.waiting).toBe(0);
    });

    it('stops following a tools/list cursor that never ends, and offers the tools listed so far', async () => {
      const before = await voiceEvents();
      const device = await stack.device({ deviceId: nextDeviceId(), features: { mcp: true }, mcp: { pageSize: 1, misbehave: { endlessToolsList: true } } });
      await waitFor(async () => (await listedTools(device)).length > 0);
      expect(await eventsSince(before)).toEqual({ device_mcp_endless_cursor: 1 });
      expect(device.mcp.seen.filter((request) => request.payload.method === 'tools/list')).toHaveLength(16);
      expect((await listedTools(device)).sort()).toEqual(['self_audio_speaker_set_volume', 'self_get_device_status', 'self_light_set_rgb']);
      const call = await callTool(device, 'self_audio_speaker_set_volume', { volume: 25 });
      expect(call).toMatchObject({ status: 200, body: { result: 'true' } });
      expect(device.board.volume).toBe(25);
    });

    it("ends the model's turn with the tool timeout when the device never answers tools/call, alerts it, and leaves nothing waiting", async () => {
      const device = await stack.device({ deviceId: nextDeviceId(), features: { mcp: true }, mcp: { misbehave: { silentTo: ['tools/call'] } } });
      await waitFor(async () => (await listedTools(device)).includes('self_audio_speaker_set_volume'));
      stack.stt.reply({ text: 'set the volume to ten' });
      stack.llm.reply({ toolCalls: [{ name: 'self_audio_speaker_set_volume', arguments: { volume: 10 } }] });
      device.listen('manual');
      await speak(device);
      device.stopListening();
      await device.next('stt');
      const calledAt = performance.now();
      const before = await voiceEvents();
      expect(await device.next('alert', undefined, 5000)).toMatchObject({ status: 'error', message: expect.stringMatching(/timeout/i) });
      expect(performance.now() - calledAt).toBeGreaterThan(800);
      expect(device.mcp.seen.filter((request) => request.payload.method === 'tools/call')).toHaveLength(1);
      // The model is not asked again: the turn ended with the timeout.
      await sleep(200);
      expect(stack.llm.requests).toHaveLength(1);
      const { state } = connectionOf(device);
      expect(state.mcp?.waiting).toBe(0);
      expect(state.turns.size).toBe(0);
      expect(device.board.volume).toBe(70);
      expect(Object.keys(await eventsSince(before)).filter((event) => event.startsWith('device_mcp_'))).toEqual([]);
      await expectSpokenTurn(device);
    });
  });

  it('alerts the device when the recognizer is down, fails, is slow or answers garbage, counts each, and hears it again', async () => {
    const device = await stack.device({ deviceId: nextDeviceId() });
    const before = await voiceEvents();
    const failures: [string, () => void][] = [
      ['down', () => stack.sttProxy!.interrupt()],
      ['HTTP 500', () => stack.stt.reply({ fault: 'http500' })],
      ['slower than STT_TIMEOUT', () => stack.stt.reply({ text: 'too late', delayMs: 2500 })],
      ['an HTML page', () => stack.stt.reply({ fault: 'garbage' })],
      ['JSON without text', () => stack.stt.reply({ fault: 'noText' })],
    ];
    for (const [what, breakIt] of failures) {
      breakIt();
      device.listen('manual');
      await speak(device);
      device.stopListening();
      const alert = await device.next('alert', undefined, 5000).catch((error: Error) => Promise.reject(new Error(`${what}: ${error.message}`)));
      expect(alert).toMatchObject({ status: 'error', message: 'Speech recognition failed; please try again' });
      stack.sttProxy!.restore();
    }
    expect(await eventsSince(before)).toEqual({ recognizer_failed: failures.length });
    // The slow one was given up at STT_TIMEOUT: the gateway hung up before its answer.
    expect(stack.stt.closedEarly).toBe(1);
    expect(stack.llm.requests).toHaveLength(0);
    expect(device.sttTexts).toEqual([]);
    await expectSpokenTurn(device);
  });

  it('alerts the device when the synthesizer is down, fails, hangs, stalls or answers garbage, ends the answer, counts each, and speaks again', async () => {
    const device = await stack.device({ deviceId: nextDeviceId() });
    const before = await voiceEvents();
    const failures: [string, () => void][] = [
      ['down', () => stack.ttsProxy!.interrupt()],
      ['HTTP 500', () => stack.tts.reply({ fault: 'http500' })],
      ['no answer', () => stack.tts.reply({ fault: 'hang' })],
      ['a header and then nothing', () => stack.tts.reply({ fault: 'stall' })],
      ['bytes that are not a WAV', () => stack.tts.reply({ fault: 'garbage' })],
      ['JSON', () => stack.tts.reply({ fault: 'json' })],
    ];
    for (const [what, breakIt] of failures) {
      breakIt();
      const said = await push(device, 'Dinner is ready.');
      expect(said.status).toBe(200);
      const alert = await device.next('alert', undefined, 5000).catch((error: Error) => Promise.reject(new Error(`${what}: ${error.message}`)));
      expect(alert).toMatchObject({ status: 'error', message: 'Speech synthesis failed' });
      await device.next('tts', (message: any) => message.state === 'stop', 5000);
      stack.ttsProxy!.restore();
    }
    expect(await eventsSince(before)).toEqual({ synthesizer_failed: failures.length });
    expect(device.audio).toHaveLength(0);
    expect(device.turns).toHaveLength(failures.length);
    expect(device.turns.every((turn) => turn.stoppedAtMs !== undefined && turn.sentences.every((sentence) => sentence.packets.length === 0))).toBe(true);
    await expectSpokenTurn(device);
  });

  it('takes an abort with nothing playing and a second hello in its stride', async () => {
    const device = await stack.device({ deviceId: nextDeviceId(), features: { mcp: false } });
    const sessionId = device.sessionId;
    device.abort();
    device.sendRaw(
      JSON.stringify({
        type: 'hello',
        version: 1,
        transport: 'websocket',
        audio_params: { format: 'opus', sample_rate: 16000, channels: 1, frame_duration: 60 },
      }),
    );
    expect(await device.next('hello', (message: any) => message !== device.messages[0].message)).toMatchObject({ session_id: sessionId });
    await sleep(200);
    expect(device.messages.map((received) => received.message.type)).toEqual(['hello', 'hello']);
    await expectSpokenTurn(device);
  });

  /** A turn as a device in manual mode has it: what it says is heard, answered, and the answer spoken. */
  async function expectSpokenTurn(device: XiaozhiDevice): Promise<void> {
    stack.stt.reply({ text: 'hello there' });
    stack.llm.reply({ text: 'Hi, I am here.' });
    stack.tts.reply(halfSecond());
    if (device.state === 'listening') device.stopListening();
    const turns = device.turns.length;
    device.listen('manual');
    await speak(device);
    device.stopListening();
    expect(await device.next('stt', (message: any) => message.text === 'hello there', 5000)).toBeDefined();
    await device.next('tts', (message: any) => message.state === 'stop', 5000);
    expect(device.turns).toHaveLength(turns + 1);
    const turn = device.turns[turns];
    expect(turn.sentences.map((sentence) => sentence.text)).toEqual(['Hi, I am here.']);
    expect(turn.sentences[0].packets.length).toBe(9);
  }

  /** "hello there" from the microphone at 1.5 times real time: quick, and within the audio budget (twice real time) whatever was sent before. */
  async function speak(device: XiaozhiDevice): Promise<void> {
    for (const packet of shortSpeech) {
      await device.sendAudio([packet], { paced: false });
      await sleep(40);
    }
  }

  function track(device: XiaozhiDevice): XiaozhiDevice {
    ownDevices.push(device);
    return device;
  }

  function nextDeviceId(): string {
    deviceCount += 1;
    return `bb:ad:00:00:00:${deviceCount.toString(16).padStart(2, '0')}`;
  }

  async function metrics(): Promise<string> {
    return (await fetch(stack.gateway.http('/metrics'), { headers: agent })).text();
  }

  /** The xiaozhi voice events counted so far, by event. */
  async function voiceEvents(): Promise<Partial<Record<VoiceEvent, number>>> {
    const counts: Partial<Record<VoiceEvent, number>> = {};
    for (const [, event, value] of (await metrics()).matchAll(/^gateway_voice_events_total\{protocol="xiaozhi",event="([a-z_]+)"\} (\d+)$/gm))
      counts[event as VoiceEvent] = Number(value);
    return counts;
  }

  /** The events counted since `before`, those that grew only. */
  async function eventsSince(before: Partial<Record<VoiceEvent, number>>): Promise<Partial<Record<VoiceEvent, number>>> {
    const grown: Partial<Record<VoiceEvent, number>> = {};
    for (const [event, value] of Object.entries(await voiceEvents()) as [VoiceEvent, number][]) {
      const delta = value - (before[event] ?? 0);
      if (delta > 0) grown[event] = delta;
    }
    return grown;
  }

  async function listedTools(device: XiaozhiDevice): Promise<string[]> {
    const response = await fetch(stack.gateway.http(`/devices/${device.identity.deviceId}`), { headers: agent });
    return response.status === 200 ? ((await response.json()) as any).tools.map((tool: { name: string }) => tool.name) : [];
  }

  async function callTool(device: XiaozhiDevice, tool: string, args: unknown): Promise<{ status: number; body: any }> {
    const response = await fetch(stack.gateway.http(`/devices/${device.identity.deviceId}/tools/${tool}`), {
      method: 'POST',
      headers: agent,
      body: JSON.stringify(args),
    });
    return { status: response.status, body: await response.json() };
  }

  function push(device: XiaozhiDevice, text: string): Promise<Response> {
    return fetch(stack.gateway.http(`/devices/${device.identity.deviceId}/say`), { method: 'POST', headers: agent, body: JSON.stringify({ text }) });
  }

  /** The gateway's connection of `device` (this test runs the gateway in its own process). */
  function connectionOf(device: XiaozhiDevice): XiaozhiConnection {
    const connection = stack.gateway.app
      .get(ConnectionRegistry)
      .list<XiaozhiConnection['state']>('xiaozhi')
      .find((candidate) => candidate.state.deviceId === device.identity.deviceId);
    if (!connection) throw new Error(`No connection of ${device.identity.deviceId}`);
    return connection as XiaozhiConnection;
  }
});

/** The value of the series of `name` with exactly `labels`; 0 when it was never counted. */
function metricValue(text: string, name: string, labels: Record<string, string>): number {
  const wanted = Object.entries(labels)
    .map(([label, value]) => `${label}="${value}"`)
    .sort()
    .join(',');
  for (const line of text.split('\n')) {
    const match = /^([a-z_]+)\{([^}]*)\} (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    if (match[2].split(',').sort().join(',') === wanted) return Number(match[3]);
  }
  return 0;
}

function silence(frames: number): Uint8Array[] {
  return uplinkPackets(new Int16Array(0), frames * 60, 0).packets;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitFor(condition: () => Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('Timed out waiting for a condition');
    await sleep(25);
  }
}
