/**
 * Cuts PCM arriving in chunks of any size into frames of one fixed size, keeping the remainder
 * for the next chunk: synthesized speech and network reads never line up with Opus frames or
 * the VAD model's window.
 */
export class PcmFramer {
  private readonly pending: Int16Array;
  private filled = 0;

  constructor(readonly frameSamples: number) {
    if (!Number.isInteger(frameSamples) || frameSamples <= 0) throw new RangeError(`frame size must be a positive integer, not ${frameSamples}`);
    this.pending = new Int16Array(frameSamples);
  }

  /** The whole frames `chunk` completes, each a fresh array. */
  push(chunk: Int16Array): Int16Array[] {
    const frames: Int16Array[] = [];
    let offset = 0;
    while (offset < chunk.length) {
      const taken = Math.min(this.frameSamples - this.filled, chunk.length - offset);
      this.pending.set(chunk.subarray(offset, offset + taken), this.filled);
      this.filled += taken;
      offset += taken;
      if (this.filled === this.frameSamples) {
        frames.push(this.pending.slice());
        this.filled = 0;
      }
    }
    return frames;
  }

  /** The remainder padded with silence to a whole frame, or nothing when there is none. */
  flush(): Int16Array | undefined {
    if (this.filled === 0) return undefined;
    const frame = new Int16Array(this.frameSamples);
    frame.set(this.pending.subarray(0, this.filled));
    this.filled = 0;
    return frame;
  }
}
