import { Logger } from '@nestjs/common';
import type Redis from 'ioredis';
import type { RedisClock } from './redis-clock';
import type { SessionStoreProbe } from './session-store';

/** How long Redis gets to answer a probe: a healthy one answers in well under a millisecond. */
export const REDIS_PROBE_TIMEOUT_MS = 1_000;
/** How long one probe's answer stands: readiness is polled every few seconds, by every balancer. */
export const REDIS_PROBE_CACHE_MS = 1_000;

/**
 * Whether Redis answers, by a bounded round trip on the store's own connection: a Redis that
 * is frozen (stopped, swapping, stuck on a slow command) keeps its connections open, so the
 * connection's state alone says it is fine while every command times out. The round trip is a
 * `TIME`, which also corrects the store's estimate of Redis's clock. The answer is kept for
 * {@link REDIS_PROBE_CACHE_MS} and probes in flight are shared, so Redis sees at most about
 * one probe a second however often readiness is asked.
 */
export class RedisProbe {
  private readonly logger = new Logger('RedisSessions');
  private last?: SessionStoreProbe & { checkedAt: number };
  private inFlight?: Promise<SessionStoreProbe>;
  private silent = false;

  constructor(
    private readonly redis: Redis,
    private readonly clock: RedisClock,
  ) {}

  /** False after a probe Redis did not answer, until one it answers; undefined before the first. */
  get answered(): boolean | undefined {
    return this.last?.up;
  }

  check(): Promise<SessionStoreProbe> {
    if (this.last && Date.now() - this.last.checkedAt < REDIS_PROBE_CACHE_MS) return Promise.resolve(this.last);
    this.inFlight ??= this.probe().finally(() => (this.inFlight = undefined));
    return this.inFlight;
  }

  private async probe(): Promise<SessionStoreProbe> {
    const started = performance.now();
    let result: SessionStoreProbe;
    if (this.redis.status !== 'ready') {
      result = { up: false, problem: 'Redis is unreachable (REDIS_URL)' };
    } else {
      const answered = await withinTimeout(this.clock.sync(this.redis), REDIS_PROBE_TIMEOUT_MS);
      result = answered
        ? { up: true, latencyMs: Math.round(performance.now() - started) }
        : { up: false, problem: `Redis did not answer within ${REDIS_PROBE_TIMEOUT_MS / 1000} s (REDIS_URL)` };
    }
    // A lost connection is logged by the store; a connection that stays open and goes silent, here.
    const silent = !result.up && this.redis.status === 'ready';
    if (silent && !this.silent) this.logger.error(`${result.problem}: not ready until it does`);
    if (result.up && this.silent) this.logger.log('Redis answers again');
    this.silent = silent;
    this.last = { ...result, checkedAt: Date.now() };
    return result;
  }
}

/** Whether `work` succeeds within `ms`; a late outcome is ignored. */
async function withinTimeout(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<false>((resolve) => (timer = setTimeout(resolve, ms, false)));
  try {
    return await Promise.race([
      work.then(
        () => true,
        () => false,
      ),
      expired,
    ]);
  } finally {
    clearTimeout(timer);
  }
}
