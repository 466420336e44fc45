/** @jest-environment ../test/support/native-typed-arrays.environment.js */
import { ScriptedTranscriptionServer } from '../../../test/support/scripted-transcription-server';
import { speechAt16k, UPLINK_FORMAT, uplinkPackets } from '../../../test/support/speech-packets';
import { OpenAiRecognizer } from '../speech-engines/openai-recognizer';
import { decodeWav } from '../speech-engines/wav';
import { VoiceInput, VoiceInputSettings } from './voice-input';
import type { ListeningMode, VoiceInputEvent } from './voice-input-event';

const SETTINGS: VoiceInputSettings = {
  vad: { startThreshold: 0.5, endThreshold: 0.35, minSpeechMs: 250, silenceMs: 700 },
  maxUtteranceMs: 30_000,
  prerollMs: 300,
};

describe('VoiceInput', () => {
  let server: ScriptedTranscriptionServer;
  let speech: Int16Array;

  beforeAll(async () => {
    server = await ScriptedTranscriptionServer.start();
    speech = await speechAt16k('Turn on the kitchen light');
  });
  afterAll(() => server.close());
  beforeEach(() => server.reset());

  /** An input on a fake clock that moves one packet's duration per packet: real time, however fast the test runs. */
  function input(mode: ListeningMode, settings: Partial<VoiceInputSettings> = {}) {
    const events: VoiceInputEvent[] = [];
    let clock = 0;
    const voice = new VoiceInput({
      format: UPLINK_FORMAT,
      mode,
      recognizer: new OpenAiRecognizer({ baseUrl: server.baseUrl, model: 'whisper-test', timeoutMs: 5000 }),
      settings: { ...SETTINGS, ...settings },
      onEvent: (event) => events.push(event),
      now: () => clock,
    });
    const feed = async (packets: Uint8Array[], msPerPacket: number = UPLINK_FORMAT.frameDurationMs) => {
      for (const packet of packets) {
        clock += msPerPacket;
        await voice.push(packet);
      }
    };
    const settled = () => waitFor(() => events.some((event) => ['transcript', 'empty', 'failed'].includes(event.type)));
    return { voice, events, feed, settled };
  }

  it('in auto mode hears the end of the speech and uploads it whole, skipping packets that do not decode', async () => {
    server.reply({ text: ' Turn on the kitchen light. ' });
    const { voice, events, feed, settled } = input('auto');
    const { packets } = uplinkPackets(speech, 1000, 1500);
    const corrupt = [Uint8Array.of(0xff, 0xff, 0xff), new Uint8Array(0), new Uint8Array(2000).fill(7)];
    await feed([...packets.slice(0, 5), ...corrupt, ...packets.slice(5)]);
    await settled();
    voice.close();
    expect(events).toEqual([
      { type: 'speech-start' },
      { type: 'utterance-end', reason: 'speech-end', durationMs: expect.any(Number) },
      { type: 'transcript', text: 'Turn on the kitchen light.' },
    ]);
    expect(voice.counters.undecodable).toBe(3);
    expect(server.requests).toHaveLength(1);
    const upload = decodeWav(server.requests[0].file.bytes);
    expect(upload.sampleRate).toBe(16_000);
    const speechMs = (speech.length * 1000) / 16_000;
    const uploadMs = (upload.samples.length * 1000) / 16_000;
    expect(uploadMs).toBeGreaterThan(speechMs - 300);
    expect(uploadMs).toBeLessThan(speechMs + 900);
  });

  it('reports silence as empty without calling the recognizer, in auto and manual mode', async () => {
    const silence = uplinkPackets(new Int16Array(0), 2000, 0).packets;
    for (const mode of ['auto', 'manual'] as const) {
      const { voice, events, feed } = input(mode);
      await feed(silence);
      await voice.stop();
      voice.close();
      expect(events).toEqual([
        { type: 'utterance-end', reason: 'stopped', durationMs: expect.any(Number) },
        { type: 'empty', reason: 'no-speech' },
      ]);
    }
    expect(server.requests).toHaveLength(0);
  });

  it('in manual mode uploads everything up to stop(), and reports a blank transcript as empty', async () => {
    server.reply({ text: '   ' });
    const { voice, events, feed, settled } = input('manual');
    const { packets } = uplinkPackets(speech, 500, 300);
    await feed(packets);
    await voice.stop();
    await settled();
    voice.close();
    expect(events.map((event) => event.type)).toEqual(['utterance-end', 'empty']);
    expect(events[1]).toEqual({ type: 'empty', reason: 'blank-transcript' });
    expect(decodeWav(server.requests[0].file.bytes).samples.length).toBe(packets.length * 960);
  });

  it('cuts an utterance at the longest length, as if the user had stopped', async () => {
    const { voice, events, feed, settled } = input('auto', { maxUtteranceMs: 1000 });
    await feed(uplinkPackets(speech, 500, 1000).packets);
    await settled();
    voice.close();
    expect(events.map((event) => event.type)).toEqual(['speech-start', 'utterance-end', 'transcript']);
    expect(events[1]).toEqual({ type: 'utterance-end', reason: 'max-length', durationMs: 1000 });
    expect(decodeWav(server.requests[0].file.bytes).samples.length).toBe(16_000);
  });

  it('refuses audio sent faster than twice real time beyond a burst, and counts it', async () => {
    const { voice, feed } = input('auto');
    const { packets } = uplinkPackets(new Int16Array(0), 6000, 0);
    await feed(packets.slice(0, 50), 30);
    expect(voice.counters.overBudget).toBe(0);
    await feed(packets.slice(50), 0);
    voice.close();
    expect(voice.counters.overBudget).toBeGreaterThan(packets.length - 50 - 40);
    expect(voice.counters.overBudget).toBeLessThan(packets.length - 50);
  });

  it('aborts the recognition in flight on close(), and reports nothing after', async () => {
    server.reply({ text: 'too late', delayMs: 2000 });
    const { voice, events, feed } = input('auto');
    await feed(uplinkPackets(speech, 500, 1500).packets);
    await waitFor(() => server.requests.length === 1);
    voice.close();
    await waitFor(() => server.closedEarly === 1);
    expect(events.map((event) => event.type)).toEqual(['speech-start', 'utterance-end']);
    await voice.push(new Uint8Array(10));
    expect(voice.counters).toEqual({ undecodable: 0, overBudget: 0, whileRecognizing: expect.any(Number) });
  });
});

async function waitFor(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  for (let waited = 0; !condition() && waited < timeoutMs; waited += 20) await new Promise((resolve) => setTimeout(resolve, 20));
  expect(condition()).toBe(true);
}
