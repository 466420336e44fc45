import { ScriptedSpeechServer, sine } from '../../../test/support/scripted-speech-server';
import { OpusDecoder } from '../audio/opus-decoder';
import { OpenAiSynthesizer } from '../speech-engines/openai-synthesizer';
import { SpeechEngineError } from '../speech-engines/speech-engine.error';
import { VoiceOutput } from './voice-output';
import type { VoiceOutputEvent } from './voice-output-event';

const DEVICE = { sampleRate: 16_000, frameDurationMs: 60 } as const;
const LEAD_FRAMES = 3;

describe('VoiceOutput', () => {
  let server: ScriptedSpeechServer;

  beforeAll(async () => {
    server = await ScriptedSpeechServer.start();
  });
  afterAll(() => server.close());
  beforeEach(() => server.reset());

  /** An output whose pacing clock stands still until `release()`: only the lead can be sent before. */
  function output() {
    const packets: Uint8Array[] = [];
    const events: VoiceOutputEvent[] = [];
    let frozen = true;
    const voice = new VoiceOutput({
      format: DEVICE,
      synthesizer: new OpenAiSynthesizer({
        baseUrl: server.baseUrl,
        model: 'tts-test',
        voice: 'alloy',
        format: 'pcm',
        sampleRate: 24_000,
        idleTimeoutMs: 5000,
      }),
      send: (packet) => packets.push(packet),
      onEvent: (event) => events.push(event),
      leadFrames: LEAD_FRAMES,
      now: () => (frozen ? 0 : performance.now()),
    });
    return { voice, packets, events, release: () => (frozen = false) };
  }

  it('speaks two sentences as paced Opus frames that decode to as long as what was synthesized', async () => {
    server.reply({ samples: sine(440, 0.5, 24_000), pieceBytes: 4801 }, { samples: sine(660, 0.3, 24_000) });
    const { voice, packets, events, release } = output();
    voice.begin();
    voice.say('First sentence.');
    voice.say('Second one.');
    voice.end();
    await waitFor(() => packets.length === LEAD_FRAMES);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(packets).toHaveLength(LEAD_FRAMES);
    expect(events).toEqual([{ type: 'sentence-start', text: 'First sentence.' }]);
    release();
    const summary = await voice.finished;
    await voice.close();
    expect(summary).toEqual({
      outcome: 'played',
      sentences: [
        { text: 'First sentence.', spoken: 'spoken' },
        { text: 'Second one.', spoken: 'spoken' },
      ],
    });
    expect(events).toEqual([
      { type: 'sentence-start', text: 'First sentence.' },
      { type: 'sentence-start', text: 'Second one.' },
      { type: 'stopped', ...summary },
    ]);
    const decoder = new OpusDecoder(DEVICE.sampleRate);
    const decodedSamples = packets.reduce((total, packet) => total + decoder.decode(packet).length, 0);
    decoder.free();
    const synthesizedSamples = (0.5 + 0.3) * DEVICE.sampleRate;
    expect(decodedSamples).toBeGreaterThanOrEqual(synthesizedSamples);
    expect(decodedSamples - synthesizedSamples).toBeLessThanOrEqual(2 * 960);
  });

  it('stops at once on abort in the first sentence, ends its synthesis, and reports it partly spoken and the second not', async () => {
    server.reply({ samples: sine(440, 3, 24_000), pieceBytes: 4800, intervalMs: 20 }, { samples: sine(660, 1, 24_000) });
    const { voice, packets, events } = output();
    voice.begin();
    voice.say('A long first sentence.');
    voice.say('A second.');
    await waitFor(() => packets.length === LEAD_FRAMES);
    const summary = await voice.abort();
    const sentAtAbort = packets.length;
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(packets).toHaveLength(sentAtAbort);
    expect(summary).toEqual({
      outcome: 'aborted',
      sentences: [
        { text: 'A long first sentence.', spoken: 'partly' },
        { text: 'A second.', spoken: 'unspoken' },
      ],
    });
    expect(events.map((event) => event.type)).toEqual(['sentence-start', 'stopped']);
    await waitFor(() => server.streams[0]?.closedEarlyAt !== undefined);
    await voice.close();
  });

  it('reports a synthesis failure as a SpeechEngineError, after the sentences before it played, and can speak the next answer', async () => {
    server.reply({ samples: sine(440, 0.2, 24_000) }, { fault: 'http500' });
    const { voice, packets, release } = output();
    release();
    voice.begin();
    voice.say('Fine.');
    voice.say('Broken.');
    voice.end();
    const summary = await voice.finished;
    expect(summary).toMatchObject({
      outcome: 'failed',
      sentences: [
        { text: 'Fine.', spoken: 'spoken' },
        { text: 'Broken.', spoken: 'unspoken' },
      ],
    });
    expect(summary.error).toBeInstanceOf(SpeechEngineError);
    expect(summary.error).toMatchObject({ engine: 'synthesizer', code: 'http-error' });
    const afterFailure = packets.length;
    voice.begin();
    voice.say('Again.');
    voice.end();
    await expect(voice.finished).resolves.toMatchObject({ outcome: 'played' });
    expect(packets.length).toBeGreaterThan(afterFailure);
    await voice.close();
    expect(() => voice.begin()).toThrow(/after close/);
  });
});

async function waitFor(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  for (let waited = 0; !condition() && waited < timeoutMs; waited += 20) await new Promise((resolve) => setTimeout(resolve, 20));
  expect(condition()).toBe(true);
}
