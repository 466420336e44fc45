import { ALLOWED, RateDecision, RateLimiter } from './rate-limiter';

interface Window {
  endsAt: number;
  count: number;
}

/** How many keys may be kept before windows that are over are swept away. */
const SWEEP_ABOVE = 10_000;

/** Fixed-window counters in this process: the limiter without Redis, answering at once. */
export class MemoryRateLimiter implements RateLimiter {
  private readonly windows = new Map<string, Window>();

  constructor(private readonly now: () => number = Date.now) {}

  hit(key: string, limit: number, windowMs: number): RateDecision {
    const now = this.now();
    let window = this.windows.get(key);
    if (!window || window.endsAt <= now) {
      if (this.windows.size >= SWEEP_ABOVE) this.sweep(now);
      window = { endsAt: now + windowMs, count: 0 };
      this.windows.set(key, window);
    }
    window.count += 1;
    return window.count <= limit ? ALLOWED : { allowed: false, retryAfterMs: window.endsAt - now };
  }

  private sweep(now: number): void {
    for (const [key, window] of this.windows) if (window.endsAt <= now) this.windows.delete(key);
  }
}
