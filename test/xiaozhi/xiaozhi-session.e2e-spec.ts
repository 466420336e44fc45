/** @jest-environment ./test/support/native-typed-arrays.environment.js */
import { sine } from '../support/scripted-speech-server';
import { lastUserText, toolResults } from '../support/scripted-llm';
import { uplinkPackets } from '../support/speech-packets';
import { DEVICE_TOKEN, startXiaozhiStack, XiaozhiStack } from '../support/xiaozhi/xiaozhi-stack';

const OUTPUT_RATE = 24_000;
/** One sentence of synthesized speech: half a second of a tone, so its frames can be counted (60 ms each). */
const halfSecond = () => ({ samples: sine(440, 0.5, OUTPUT_RATE) });
/** Agents see the devices of their own principal: here, the devices' shared token. */
const agent = { Authorization: `Bearer ${DEVICE_TOKEN}`, 'Content-Type': 'application/json' };

/**
 * A simulated xiaozhi firmware (test/support/xiaozhi) against the gateway, with real Opus, real
 * speech from espeak-ng and the real Silero VAD, and scripted recognizer, model and synthesizer:
 * the configuration request, the session, a spoken question that needs a tool, the answer heard
 * as Opus, interruptions, the device's own MCP tools, and pushes spoken.
 */
describe('xiaozhi devices over WebSocket', () => {
  let stack: XiaozhiStack;

  beforeAll(async () => {
    stack = await startXiaozhiStack({ VAD_SILENCE_MS: 500 });
  });

  afterEach(() => {
    stack.llm.reset();
    stack.stt.reset();
    stack.tts.reset();
  });

  afterAll(() => stack?.close());

  it('answers the configuration request with the session URL, the device token and the time, and records the board', async () => {
    const device = await stack.device({ deviceId: 'aa:bb:cc:00:00:01', firmwareVersion: '2.4.2' });
    expect(device.configuration.websocket).toMatchObject({ url: stack.gateway.ws('/xiaozhi/v1/'), token: 'xiaozhi-device-secret' });
    const get = await fetch(stack.gateway.http('/xiaozhi/ota/'), { headers: { 'Device-Id': 'aa:bb:cc:00:00:01' } });
    const body = (await get.json()) as any;
    expect(body.server_time).toEqual({ timestamp: expect.any(Number), timezone_offset: 480 });
    expect(Math.abs(body.server_time.timestamp - Date.now())).toBeLessThan(5000);
    expect((await fetch(stack.gateway.http('/xiaozhi/ota/'), { method: 'POST' })).status).toBe(400);
    const listed = (await (await fetch(stack.gateway.http('/devices/aa:bb:cc:00:00:01'), { headers: agent })).json()) as any;
    expect(listed).toMatchObject({ id: 'aa:bb:cc:00:00:01', protocol: 'xiaozhi', user_agent: 'bread-compact-wifi/2.4.2' });
  });

  it('hears a spoken question in auto mode, runs the tool the model calls on the device, and speaks the answer as paced Opus', async () => {
    const device = await stack.device({ deviceId: 'aa:bb:cc:00:00:02', features: { mcp: true } });
    await waitFor(async () => (await listedTools('aa:bb:cc:00:00:02')).includes('self_audio_speaker_set_volume'));
    stack.stt.reply({ text: 'set the volume to forty' });
    stack.llm.reply(
      { toolCalls: [{ name: 'self_audio_speaker_set_volume', arguments: { volume: 40 } }] },
      { text: 'Done 😊 The volume is forty now. Anything else?' },
    );
    stack.tts.reply(halfSecond(), halfSecond());
    device.listen('auto');
    await device.say('set the volume to forty');
    expect(await device.next<any>('stt', undefined, 10_000)).toMatchObject({ text: 'set the volume to forty' });
    await device.next('tts', (message: any) => message.state === 'stop', 10_000);
    expect(device.board.volume).toBe(40);
    expect(stack.llm.requests[0].tools?.map((tool) => tool.function.name)).toEqual(
      expect.arrayContaining(['self_get_device_status', 'self_audio_speaker_set_volume', 'self_light_set_rgb']),
    );
    expect(Object.values(toolResults(stack.llm.requests[1]))).toEqual([true]);
    expect(device.emotions).toEqual(['happy']);
    const [turn] = device.turns;
    expect(turn.sentences.map((sentence) => sentence.text)).toEqual(['Done The volume is forty now.', 'Anything else?']);
    // Each half-second sentence is 9 frames of 60 ms (the last one padded), paced: no faster than they play, plus a small lead.
    expect(turn.sentences.map((sentence) => sentence.packets.length)).toEqual([9, 9]);
    const arrivals = turn.sentences.flatMap((sentence) => sentence.packets.map((packet) => packet.atMs));
    expect(arrivals[arrivals.length - 1] - arrivals[0]).toBeGreaterThan(17 * 60 - 400);
    expect(device.playedDurationMs()).toBeGreaterThanOrEqual(1000);
    // The recognizer got the utterance the VAD cut, as a WAV of 16 kHz speech.
    expect(stack.stt.requests).toHaveLength(1);
    // After `tts stop`, an auto-mode device listens again by itself.
    await device.waitForState('listening', 5000);
  });

  it('plays the first sentence while the model is still writing the rest', async () => {
    const device = await stack.device({ deviceId: 'aa:bb:cc:00:00:08' });
    stack.stt.reply({ text: 'describe the sky' });
    stack.llm.reply({
      text: 'The sky is blue today. Clouds drift slowly from the west over the hills and far away.',
      pace: { firstTokenMs: 50, tokensPerSecond: 8 },
    });
    stack.tts.reply(halfSecond(), halfSecond());
    device.listen('auto');
    await device.say('describe the sky');
    await device.next('tts', (message: any) => message.state === 'sentence_start', 10_000);
    const firstFrameAt = performance.now();
    await device.next('tts', (message: any) => message.state === 'stop', 15_000);
    const [stream] = stack.llm.streams;
    expect(stream.sent.at(-1)!.at).toBeGreaterThan(firstFrameAt + 500);
    expect(device.turns[0].sentences[0].packets.length).toBe(9);
  });

  it('keeps only what was spoken in the history when the device aborts mid-answer, and stops sending within a frame', async () => {
    const device = await stack.device({ deviceId: 'aa:bb:cc:00:00:03' });
    stack.stt.reply({ text: 'tell me a story' }, { text: 'and then' });
    stack.llm.reply({ text: 'Once upon a time there was a lamp. It lived in a kitchen. It was very bright. The end.' }, { text: 'Fine.' });
    stack.tts.reply({ samples: sine(440, 1.5, OUTPUT_RATE) }, { samples: sine(440, 1.5, OUTPUT_RATE) }, halfSecond(), halfSecond(), halfSecond());
    device.listen('auto');
    await device.say('tell me a story');
    await device.next('tts', (message: any) => message.state === 'sentence_start', 10_000);
    await sleep(400);
    device.abort();
    const abortedAt = device.nowMs();
    await device.next('tts', (message: any) => message.state === 'stop', 5000);
    const late = device.turns[0].sentences.flatMap((sentence) => sentence.packets).filter((packet) => packet.atMs > abortedAt + 60);
    expect(late).toHaveLength(0);
    // The next turn's history holds the user's words and the first sentence only.
    await device.waitForState('listening', 5000);
    await device.say('and then');
    await device.next('tts', (message: any) => message.state === 'stop', 10_000);
    const history = stack.llm.requests[1].messages.filter((message) => message.role !== 'system');
    expect(history.slice(0, 2)).toEqual([
      expect.objectContaining({ role: 'user', content: 'tell me a story' }),
      expect.objectContaining({ role: 'assistant', content: 'Once upon a time there was a lamp.' }),
    ]);
  });

  it('lets the user talk over the answer in realtime mode: speech heard while it speaks cuts it', async () => {
    const device = await stack.device({ deviceId: 'aa:bb:cc:00:00:04', aec: 'device' });
    stack.stt.reply({ text: 'read me the news' }, { text: 'stop' });
    stack.llm.reply({ text: 'Here is a very long bulletin that goes on and on.' }, { text: 'Stopped.' });
    stack.tts.reply({ samples: sine(440, 6, OUTPUT_RATE) }, halfSecond());
    device.listen('realtime');
    await device.say('read me the news');
    await device.next('tts', (message: any) => message.state === 'sentence_start', 10_000);
    await device.say('stop', { beforeMs: 100 });
    await device.next('tts', (message: any) => message.state === 'stop', 5000);
    expect(device.turns[0].sentences[0].packets.length).toBeLessThan(100);
    expect(await device.next<any>('stt', (message: any) => message.text === 'stop', 10_000)).toBeDefined();
  });

  it('ends a manual utterance at listen stop, and answers an empty one with nothing', async () => {
    const device = await stack.device({ deviceId: 'aa:bb:cc:00:00:05' });
    stack.stt.reply({ text: 'what time is it' });
    stack.llm.reply({ text: 'It is noon.' });
    stack.tts.reply(halfSecond());
    device.listen('manual');
    await device.say('what time is it', { afterMs: 200 });
    device.stopListening();
    await device.next('tts', (message: any) => message.state === 'stop', 10_000);
    expect(lastUserText(stack.llm.requests[0])).toBe('what time is it');
    // Silence alone: the recognizer and the model are not asked.
    device.listen('manual');
    await device.sendAudio(silence(15));
    device.stopListening();
    await sleep(800);
    expect(stack.stt.requests).toHaveLength(1);
    expect(stack.llm.requests).toHaveLength(1);
  });

  it('speaks a push and answers a pushed turn aloud', async () => {
    const device = await stack.device({ deviceId: 'aa:bb:cc:00:00:06' });
    stack.tts.reply(halfSecond(), halfSecond(), halfSecond());
    const said = await fetch(stack.gateway.http('/devices/aa:bb:cc:00:00:06/say'), {
      method: 'POST',
      headers: agent,
      body: JSON.stringify({ text: 'Dinner is ready.' }),
    });
    expect(said.status).toBe(200);
    expect(await said.json()).toMatchObject({ delivered: 'spoken' });
    await device.next('tts', (message: any) => message.state === 'stop', 5000);
    expect(device.turns[0].sentences.map((sentence) => sentence.text)).toEqual(['Dinner is ready.']);
    stack.llm.reply({ text: 'The weather is fine.' });
    const turn = await fetch(stack.gateway.http('/devices/aa:bb:cc:00:00:06/turns'), {
      method: 'POST',
      headers: agent,
      body: JSON.stringify({ text: 'how is the weather' }),
    });
    expect(turn.status).toBe(200);
    await device.next('tts', (message: any) => message.state === 'stop', 5000);
    expect(device.turns[1].sentences.map((sentence) => sentence.text)).toEqual(['The weather is fine.']);
    expect(device.turns[1].sentences[0].packets.length).toBe(9);
  });

  it('alerts the device when the recognizer, the model or the synthesizer fails, and goes on serving it', async () => {
    const device = await stack.device({ deviceId: 'aa:bb:cc:00:00:07' });
    stack.stt.reply({ fault: 'http500' }, { text: 'hello' }, { text: 'hello again' });
    device.listen('auto');
    await device.say('hello');
    expect(await device.next<any>('alert', undefined, 10_000)).toMatchObject({ status: 'error', message: expect.stringMatching(/recognition/i) });
    stack.llm.reply({ fault: 'http500' });
    await device.say('hello');
    expect(await device.next<any>('alert', undefined, 10_000)).toMatchObject({ status: 'error' });
    stack.llm.reply({ text: 'Hi there.' });
    stack.tts.reply({ fault: 'http500' });
    await device.waitForState('listening', 5000);
    await device.say('hello again');
    expect(await device.next<any>('alert', undefined, 10_000)).toMatchObject({ message: expect.stringMatching(/synthesis/i) });
    await device.next('tts', (message: any) => message.state === 'stop', 5000);
    const metrics = await (await fetch(stack.gateway.http('/metrics'), { headers: agent })).text();
    for (const event of ['recognizer_failed', 'turn_failed', 'synthesizer_failed'])
      expect(metrics).toMatch(new RegExp(`gateway_voice_events_total\\{protocol="xiaozhi",event="${event}"\\} 1`));
  });

  /** The tools the device offers agents, as the directory lists them. */
  async function listedTools(id: string): Promise<string[]> {
    const response = await fetch(stack.gateway.http(`/devices/${id}`), { headers: agent });
    return response.status === 200 ? ((await response.json()) as any).tools.map((tool: { name: string }) => tool.name) : [];
  }
});

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
