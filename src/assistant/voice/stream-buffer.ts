/**
 * The recent samples of one audio stream, addressed by their index since the stream began:
 * chunks are kept as they arrived (no copying per packet) and the oldest dropped on request, so
 * the part of the stream before speech is a bounded pre-roll and the utterance is cut out once.
 */
export class StreamBuffer {
  private readonly chunks: Int16Array[] = [];
  private first = 0;
  private total = 0;

  /** Index of the oldest sample kept. */
  get start(): number {
    return this.first;
  }

  /** Index one past the newest sample. */
  get end(): number {
    return this.total;
  }

  append(chunk: Int16Array): void {
    if (chunk.length === 0) return;
    this.chunks.push(chunk);
    this.total += chunk.length;
  }

  /** Forgets whole chunks that end at or before `sample`. */
  dropBefore(sample: number): void {
    while (this.chunks.length > 0 && this.first + this.chunks[0].length <= sample) this.first += (this.chunks.shift() as Int16Array).length;
  }

  /** A copy of samples `from` (inclusive) to `to` (exclusive), clamped to what is kept. */
  copy(from: number, to: number): Int16Array {
    const begin = Math.max(from, this.first);
    const out = new Int16Array(Math.max(0, Math.min(to, this.total) - begin));
    let at = this.first;
    for (const chunk of this.chunks) {
      const lo = Math.max(begin, at);
      const hi = Math.min(begin + out.length, at + chunk.length);
      if (hi > lo) out.set(chunk.subarray(lo - at, hi - at), lo - begin);
      at += chunk.length;
    }
    return out;
  }

  /** Forgets everything: the next sample appended is index 0. */
  clear(): void {
    this.chunks.length = 0;
    this.first = 0;
    this.total = 0;
  }
}
