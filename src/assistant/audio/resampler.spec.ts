import { speak } from '../../../test/support/espeak';
import { Resampler } from './resampler';

function concat(parts: Int16Array[]): Int16Array {
  const out = new Int16Array(parts.reduce((sum, part) => sum + part.length, 0));
  parts.reduce((offset, part) => (out.set(part, offset), offset + part.length), 0);
  return out;
}

/** Energy at `frequency` (Goertzel), to check a tone keeps its pitch. */
function powerAt(samples: Int16Array, rate: number, frequency: number): number {
  const coefficient = 2 * Math.cos((2 * Math.PI * frequency) / rate);
  let previous = 0;
  let beforePrevious = 0;
  for (const sample of samples) {
    const current = sample + coefficient * previous - beforePrevious;
    beforePrevious = previous;
    previous = current;
  }
  return previous * previous + beforePrevious * beforePrevious - coefficient * previous * beforePrevious;
}

describe('Resampler', () => {
  it.each([
    [22_050, 16_000],
    [22_050, 24_000],
    [16_000, 48_000],
    [48_000, 16_000],
  ])('converts espeak speech from %i to %i Hz in uneven chunks, its duration kept to the sample', async (from, to) => {
    const spoken = await speak('Turn on the kitchen light');
    const input = from === spoken.sampleRate ? spoken.samples : concat([(await Resampler.open(spoken.sampleRate, from)).push(spoken.samples)]);
    const resampler = await Resampler.open(from, to);
    const parts: Int16Array[] = [];
    for (let offset = 0, size = 7; offset < input.length; offset += size, size = (size * 7) % 1201)
      parts.push(resampler.push(input.subarray(offset, offset + size)));
    parts.push(resampler.flush());
    resampler.free();
    expect(concat(parts).length).toBe(Math.round((input.length * to) / from));
  });

  it('keeps a tone at its pitch across chunk joins', async () => {
    const tone = Int16Array.from({ length: 22_050 }, (_, i) => Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / 22_050)));
    const resampler = await Resampler.open(22_050, 16_000);
    const out = concat([resampler.push(tone.subarray(0, 5000)), resampler.push(tone.subarray(5000)), resampler.flush()]);
    resampler.free();
    const steady = out.subarray(1000, 15_000);
    expect(powerAt(steady, 16_000, 440)).toBeGreaterThan(100 * powerAt(steady, 16_000, 600));
  });

  it('passes audio through unchanged at equal rates, and refuses use after free', async () => {
    const same = await Resampler.open(16_000, 16_000);
    expect(Array.from(same.push(Int16Array.of(1, 2, 3)))).toEqual([1, 2, 3]);
    const real = await Resampler.open(16_000, 24_000);
    real.free();
    expect(() => real.push(Int16Array.of(1))).toThrow(/after free/);
  });
});
