/** @jest-environment ./test/support/native-typed-arrays.environment.js */
import { OpenAiRecognizer } from '../../src/assistant/speech-engines/openai-recognizer';
import { VoiceInput } from '../../src/assistant/voice/voice-input';
import type { VoiceInputEvent } from '../../src/assistant/voice/voice-input-event';
import { PocketsphinxServer } from '../support/pocketsphinx-server';
import { speechAt16k, UPLINK_FORMAT, uplinkPackets } from '../support/speech-packets';

describe('a device utterance heard end to end: Opus, Silero VAD, a real recognizer (pocketsphinx)', () => {
  let server: PocketsphinxServer;

  beforeAll(async () => {
    server = await PocketsphinxServer.start();
  });
  afterAll(() => server?.close());

  it('hears "turn on the kitchen light", said by espeak-ng between silences, in auto mode (fed at real time by its clock)', async () => {
    const speech = await speechAt16k('turn on the kitchen light', { voice: 'en-us', rate: 140 });
    const events: VoiceInputEvent[] = [];
    let clock = 0;
    const input = new VoiceInput({
      format: UPLINK_FORMAT,
      mode: 'auto',
      recognizer: new OpenAiRecognizer({ baseUrl: server.baseUrl, model: 'pocketsphinx-en-us', language: 'en', timeoutMs: 20_000 }),
      settings: { vad: { startThreshold: 0.5, endThreshold: 0.35, minSpeechMs: 250, silenceMs: 700 }, maxUtteranceMs: 30_000, prerollMs: 300 },
      onEvent: (event) => events.push(event),
      now: () => clock,
    });
    for (const packet of uplinkPackets(speech, 800, 1200).packets) {
      clock += UPLINK_FORMAT.frameDurationMs;
      await input.push(packet);
    }
    for (let waited = 0; events.length < 3 && waited < 20_000; waited += 50) await new Promise((resolve) => setTimeout(resolve, 50));
    input.close();
    expect(events.map((event) => event.type)).toEqual(['speech-start', 'utterance-end', 'transcript']);
    const { text } = events[2] as { text: string };
    expect(text).toMatch(/\bkitchen\b/);
    expect(text).toMatch(/\blight\b/);
  });
});
