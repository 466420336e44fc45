import { speak } from '../../../test/support/espeak';
import { OpusDecoder } from './opus-decoder';
import { OpusEncoder } from './opus-encoder';
import { OpusPacketError } from './opus-packet.error';
import { PcmFramer } from './pcm-framer';
import { Resampler } from './resampler';

function rms(samples: Int16Array): number {
  let sum = 0;
  for (const sample of samples) sum += sample * sample;
  return Math.sqrt(sum / samples.length);
}

async function speechAt(rate: number): Promise<Int16Array> {
  const spoken = await speak('Turn on the kitchen light');
  const resampler = await Resampler.open(spoken.sampleRate, rate);
  const samples = new Int16Array([...resampler.push(spoken.samples), ...resampler.flush()]);
  resampler.free();
  return samples;
}

describe('Opus on real speech', () => {
  it.each([16_000, 24_000] as const)(
    'encodes espeak speech at %i Hz into 60 ms packets and decodes it back: same length within a frame, similar energy',
    async (rate) => {
      const speech = await speechAt(rate);
      const framer = new PcmFramer((rate * 60) / 1000);
      const frames = [...framer.push(speech), framer.flush() as Int16Array];
      const encoder = new OpusEncoder({ sampleRate: rate, frameDurationMs: 60 });
      const decoder = new OpusDecoder(rate);
      const packets = frames.map((frame) => encoder.encode(frame));
      const decoded = packets.map((packet) => decoder.decode(packet));
      encoder.free();
      decoder.free();

      expect(Math.max(...packets.map((packet) => packet.length))).toBeLessThan(400);
      const total = decoded.reduce((sum, frame) => sum + frame.length, 0);
      expect(Math.abs(total - speech.length)).toBeLessThanOrEqual(framer.frameSamples);
      const out = new Int16Array(total);
      decoded.reduce((offset, frame) => (out.set(frame, offset), offset + frame.length), 0);
      expect(rms(speech)).toBeGreaterThan(1000);
      expect(rms(out) / rms(speech)).toBeGreaterThan(0.7);
      expect(rms(out) / rms(speech)).toBeLessThan(1.3);
    },
  );

  it('refuses oversized, empty and corrupt packets with OpusPacketError, and then decodes the next good packet', async () => {
    const speech = await speechAt(16_000);
    const encoder = new OpusEncoder({ sampleRate: 16_000, frameDurationMs: 60 });
    const good = encoder.encode(speech.subarray(8000, 8960));
    const decoder = new OpusDecoder(16_000);

    const refusals = [new Uint8Array(1276).fill(0x42), new Uint8Array(0), Uint8Array.of(0xff, 0xff, 0xff)].map((packet) => {
      try {
        decoder.decode(packet);
        return 'decoded';
      } catch (error) {
        return error instanceof OpusPacketError ? error.reason : String(error);
      }
    });
    expect(refusals).toEqual(['too-large', 'empty', 'invalid']);
    expect(() => decoder.decode(Uint8Array.of(0xff, 0xff, 0xff))).toThrow(/Opus packet dropped \(invalid\)/);
    expect(decoder.decode(good)).toHaveLength(960);
  });

  it('refuses a frame of the wrong length, an unsupported rate, and use after free', () => {
    const encoder = new OpusEncoder({ sampleRate: 16_000, frameDurationMs: 60 });
    expect(() => encoder.encode(new Int16Array(959))).toThrow(/960 samples, not 959/);
    expect(() => new OpusDecoder(22_050 as 16_000)).toThrow(/22050 Hz/);
    encoder.free();
    expect(() => encoder.encode(new Int16Array(960))).toThrow(/after free/);
  });
});
