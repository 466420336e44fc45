import { execFileSync } from 'child_process';
import { OpenAiRecognizer } from '../../src/assistant/speech-engines/openai-recognizer';
import type { PcmAudio } from '../../src/assistant/speech-engines/speech-engine';
import { decodeWav } from '../../src/assistant/speech-engines/wav';
import { PocketsphinxServer } from '../support/pocketsphinx-server';

/** `text` spoken by espeak-ng's American voice, at a pace pocketsphinx follows: a 22,050 Hz WAV. */
function spoken(text: string): PcmAudio {
  return decodeWav(execFileSync('espeak-ng', ['-v', 'en-us', '-s', '140', '--stdout', text]));
}

/** `audio` at `rate`, by linear interpolation: enough for speech going down from 22,050 Hz to 16 kHz. */
function resampled({ samples, sampleRate }: PcmAudio, rate: number): PcmAudio {
  const out = new Int16Array(Math.floor((samples.length * rate) / sampleRate));
  for (let index = 0; index < out.length; index += 1) {
    const at = (index * sampleRate) / rate;
    const before = Math.floor(at);
    const after = Math.min(before + 1, samples.length - 1);
    out[index] = Math.round(samples[before] + (samples[after] - samples[before]) * (at - before));
  }
  return { samples: out, sampleRate: rate };
}

describe('recognition by a real engine (pocketsphinx) through OpenAiRecognizer', () => {
  let server: PocketsphinxServer;
  let recognizer: OpenAiRecognizer;

  beforeAll(async () => {
    server = await PocketsphinxServer.start();
    recognizer = new OpenAiRecognizer({ baseUrl: server.baseUrl, model: 'pocketsphinx-en-us', language: 'en', timeoutMs: 20_000 });
  });
  afterAll(() => server?.close());

  it.each([1, 2, 3])('hears "turn on the kitchen light" said by espeak-ng (run %d)', async () => {
    const { text } = await recognizer.transcribe(resampled(spoken('turn on the kitchen light'), 16000));
    expect(text).toMatch(/\bkitchen\b/);
    expect(text).toMatch(/\blight\b/);
    expect(text).toMatch(/\bon\b/);
  });

  it('hears another command as that command, not the first one again', async () => {
    const { text } = await recognizer.transcribe(resampled(spoken('switch off the bedroom fan'), 16000));
    expect(text).toBe('switch off the bedroom fan');
  });

  it('is refused a WAV that is not 16 kHz, as a clear HTTP error', async () => {
    await expect(recognizer.transcribe(spoken('turn on the kitchen light'))).rejects.toMatchObject({ engine: 'recognizer', code: 'http-error' });
  });
});
