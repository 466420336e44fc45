import { createLibopusEncoder, LibopusEncoder, releaseLibopus } from './libopus';
import { checkOpusFormat, OpusFormat, samplesPerFrame } from './opus-format';

export interface OpusEncoderOptions {
  /** Bits per second; libopus picks one for the rate when unset. */
  bitrate?: number;
}

/**
 * Turns mono Int16 PCM frames of exactly one frame duration into Opus packets for a device.
 * Frames of any other length are refused: the device plays packets of the duration its hello
 * announced, and {@link PcmFramer} cuts synthesized speech to that length. The libopus state is
 * made on the first frame and released by {@link free}.
 */
export class OpusEncoder {
  readonly frameSamples: number;
  private encoder?: LibopusEncoder;
  private freed = false;

  constructor(
    readonly format: OpusFormat,
    private readonly options: OpusEncoderOptions = {},
  ) {
    checkOpusFormat(format);
    this.frameSamples = samplesPerFrame(format);
  }

  encode(frame: Int16Array): Uint8Array {
    if (this.freed) throw new Error('OpusEncoder used after free()');
    if (frame.length !== this.frameSamples)
      throw new RangeError(
        `an Opus frame of ${this.format.frameDurationMs} ms at ${this.format.sampleRate} Hz is ${this.frameSamples} samples, not ${frame.length}`,
      );
    if (!this.encoder) {
      this.encoder = createLibopusEncoder(this.format.sampleRate);
      if (this.options.bitrate !== undefined) this.encoder.bitrate = this.options.bitrate;
    }
    return this.encoder.encode(frame);
  }

  free(): void {
    if (this.encoder) releaseLibopus(this.encoder);
    this.encoder = undefined;
    this.freed = true;
  }
}
