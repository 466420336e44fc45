import { ConverterType, create } from '@alexanderolsen/libsamplerate-js';
import { float32ToInt16, int16ToFloat32 } from './pcm';

/** The libsamplerate object behind a {@link Resampler}. */
type SampleRateConverter = Awaited<ReturnType<typeof create>>;

/**
 * Converts mono Int16 PCM from one rate to another as it streams, chunk by chunk, with the filter
 * state kept across chunks so the joins are inaudible: speech synthesized at 22.05 kHz to the
 * 24 kHz or 16 kHz a device plays, a device's 16 kHz to what a recognizer wants. It uses
 * libsamplerate (`@alexanderolsen/libsamplerate-js`, its WASM build), the reference converter,
 * at its fastest sinc quality: band-limited, so no aliasing, at well under 1% of a core per
 * stream. Each converter is its own WASM instance (a few MB of memory), so a session opens one
 * when it has audio to convert and {@link free}s it after. Equal rates pass audio through.
 */
export class Resampler {
  private inputSamples = 0;
  private outputSamples = 0;
  private freed = false;

  private constructor(
    readonly fromRate: number,
    readonly toRate: number,
    private converter: SampleRateConverter | undefined,
  ) {}

  static async open(fromRate: number, toRate: number): Promise<Resampler> {
    for (const rate of [fromRate, toRate])
      if (!Number.isInteger(rate) || rate < 1000 || rate > 384_000) throw new RangeError(`sample rate ${rate} Hz is not supported`);
    const converter = fromRate === toRate ? undefined : await create(1, fromRate, toRate, { converterType: ConverterType.SRC_SINC_FASTEST });
    return new Resampler(fromRate, toRate, converter);
  }

  /** The converted samples `chunk` yields now; the filter holds back a few until more arrive or {@link flush}. */
  push(chunk: Int16Array): Int16Array {
    if (this.freed) throw new Error('Resampler used after free()');
    this.inputSamples += chunk.length;
    if (chunk.length === 0) return new Int16Array(0);
    const converted = this.converter ? float32ToInt16((this.converter as SampleRateConverter).full(int16ToFloat32(chunk))) : chunk.slice();
    this.outputSamples += converted.length;
    return converted;
  }

  /**
   * The samples the filter still holds, so the whole output lasts as long as the whole input:
   * libsamplerate's streaming call has no end-of-input flag, so silence is pushed through and
   * the output cut at the length the input's duration calls for.
   */
  flush(): Int16Array {
    const expected = Math.round((this.inputSamples * this.toRate) / this.fromRate);
    const missing = expected - this.outputSamples;
    if (this.freed) throw new Error('Resampler used after free()');
    if (!this.converter || missing <= 0) return new Int16Array(0);
    const tail = float32ToInt16((this.converter as SampleRateConverter).full(new Float32Array(Math.ceil(this.fromRate * 0.05 + missing))));
    const flushed = tail.subarray(0, Math.min(missing, tail.length));
    this.outputSamples += flushed.length;
    return flushed.slice();
  }

  free(): void {
    this.converter?.destroy();
    this.converter = undefined;
    this.freed = true;
  }
}
