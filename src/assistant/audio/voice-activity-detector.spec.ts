/** @jest-environment ../test/support/native-typed-arrays.environment.js */
import { speak } from '../../../test/support/espeak';
import { Resampler } from './resampler';
import { VoiceActivityDetector, VoiceActivityEvent, VoiceActivitySettings } from './voice-activity-detector';

const SETTINGS: VoiceActivitySettings = { startThreshold: 0.5, endThreshold: 0.35, minSpeechMs: 250, silenceMs: 700 };
const RATE = 16_000;

async function speechAt16k(text: string): Promise<Int16Array> {
  const spoken = await speak(text);
  const resampler = await Resampler.open(spoken.sampleRate, RATE);
  const samples = new Int16Array([...resampler.push(spoken.samples), ...resampler.flush()]);
  resampler.free();
  return samples;
}

/** Feeds `audio` in uneven chunks, as a network delivers it. */
async function detect(audio: Int16Array, settings = SETTINGS): Promise<VoiceActivityEvent[]> {
  const detector = new VoiceActivityDetector(settings);
  const events: VoiceActivityEvent[] = [];
  for (let offset = 0, size = 960; offset < audio.length; offset += size, size = size === 960 ? 317 : 960)
    events.push(...(await detector.push(audio.subarray(offset, offset + size))));
  return events;
}

describe('VoiceActivityDetector (Silero VAD v5)', () => {
  it('finds "Turn on the kitchen light", padded with a second of silence on each side: start inside the speech, end after it', async () => {
    const speech = await speechAt16k('Turn on the kitchen light');
    const audio = new Int16Array(RATE + speech.length + RATE);
    audio.set(speech, RATE);
    const speechStartMs = 1000 + (speech.findIndex((sample) => Math.abs(sample) > 500) * 1000) / RATE;
    const speechEndMs = 1000 + (speech.length * 1000) / RATE;

    const events = await detect(audio);

    expect(events.map((event) => event.type)).toEqual(['speech-start', 'speech-end']);
    const [start, end] = events;
    expect(start.atMs).toBeGreaterThanOrEqual(speechStartMs - 100);
    expect(start.atMs).toBeLessThan(speechStartMs + 400);
    expect(end.atMs).toBeGreaterThan(speechEndMs - 400);
    expect(end.atMs).toBeLessThan(speechEndMs + 200);
  });

  it('finds no speech in silence, nor in low white noise', async () => {
    expect(await detect(new Int16Array(3 * RATE))).toEqual([]);
    let seed = 7;
    const noise = Int16Array.from({ length: 3 * RATE }, () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return Math.round((seed / 2 ** 31 - 0.5) * 600);
    });
    expect(await detect(noise)).toEqual([]);
  });

  it('does not report speech shorter than the minimum, and ends speech only after the silence setting', async () => {
    const word = await speechAt16k('yes');
    const audio = new Int16Array(RATE + word.length + 2 * RATE);
    audio.set(word, RATE);
    expect(await detect(audio, { ...SETTINGS, minSpeechMs: 2000 })).toEqual([]);
    const events = await detect(audio, { ...SETTINGS, minSpeechMs: 100, silenceMs: 1500 });
    expect(events.map((event) => event.type)).toEqual(['speech-start', 'speech-end']);
    expect(await detect(audio.subarray(0, RATE + word.length + RATE), { ...SETTINGS, minSpeechMs: 100, silenceMs: 1500 })).toEqual([events[0]]);
  });

  it('refuses an end threshold above the start threshold', () => {
    expect(() => new VoiceActivityDetector({ ...SETTINGS, endThreshold: 0.6 })).toThrow(/end threshold/);
  });
});
