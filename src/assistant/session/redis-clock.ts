import type Redis from 'ioredis';

/** A `TIME` round trip longer than this says too little about Redis's clock to correct the estimate by it. */
const MAX_SAMPLE_ROUND_TRIP_MS = 100;

/**
 * This process's estimate of Redis's clock, so a write can carry a deadline Redis itself checks
 * (a script compares it with its own `TIME`): the offset between Redis's `TIME` and this
 * process's monotonic clock, read at the middle of a round trip. The monotonic side makes it
 * immune to this machine's clock being set; a jump of Redis's clock shows as writes refused
 * though answered in time, and {@link sync} corrects it.
 */
export class RedisClock {
  private offsetMs?: number;

  /** One `TIME` round trip; corrects the estimate when it was short enough to tell (or it is the first). */
  async sync(redis: Redis): Promise<void> {
    const sentAt = performance.now();
    const [seconds, micros] = await redis.time();
    const receivedAt = performance.now();
    if (this.offsetMs !== undefined && receivedAt - sentAt > MAX_SAMPLE_ROUND_TRIP_MS) return;
    this.offsetMs = Number(seconds) * 1000 + Number(micros) / 1000 - (sentAt + receivedAt) / 2;
  }

  /** Redis's time `afterMs` from now, in milliseconds since the epoch, as its `TIME` counts. */
  deadline(afterMs: number): number {
    return Math.floor(performance.now() + (this.offsetMs ?? performance.timeOrigin) + afterMs);
  }
}
