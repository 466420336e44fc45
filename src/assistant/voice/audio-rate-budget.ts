/**
 * How much audio a device may send per unit of wall time: a token bucket filled at `speed` times
 * real time and holding at most `burstMs` of audio. A device sends as fast as it records, so a
 * burst after a network stall is normal and passes, but a client sending faster than it could
 * speak for longer than the burst (a replay, a flood) is refused what is over the budget rather
 * than having the gateway decode and analyse it all.
 */
export class AudioRateBudget {
  private creditMs: number;
  private lastAt: number;

  constructor(private readonly options: { speed: number; burstMs: number; now: () => number }) {
    if (!(options.speed > 0) || !(options.burstMs > 0)) throw new RangeError('the audio budget needs a positive speed and burst');
    this.creditMs = options.burstMs;
    this.lastAt = options.now();
  }

  /** Whether `durationMs` more audio fits the budget now; when it does, it is spent. */
  admit(durationMs: number): boolean {
    const now = this.options.now();
    this.creditMs = Math.min(this.options.burstMs, this.creditMs + Math.max(0, now - this.lastAt) * this.options.speed);
    this.lastAt = now;
    if (this.creditMs < durationMs) return false;
    this.creditMs -= durationMs;
    return true;
  }
}
