import { Logger } from '@nestjs/common';
import type Redis from 'ioredis';
import { COMMAND_TIMEOUT_MS } from '../redis/redis-connection';
import type { SharedRedis } from '../state/shared-redis';
import { ThrottledWarning } from '../logging/throttled-warning';
import { ALLOWED, RateDecision, RateLimiter } from './rate-limiter';

/**
 * One atomic round trip per request: count it, open the window on the first request (the
 * key's expiry is the window), and return the count with the time left. `PTTL` of -1 (a key
 * that lost its expiry) gets one again, so no counter can outlive its window for ever.
 */
const HIT_SCRIPT = `
local count = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if count == 1 or ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {count, ttl}`;

type HitCommand = (key: string, windowMs: number) => Promise<[number, number]>;

/**
 * Fixed-window counters in Redis (`<prefix>rate:<key>`), shared by every instance using the
 * same Redis and prefix, so a token's limit holds across replicas. When Redis fails, requests
 * are let through (and the failure logged): a limit is abuse protection, and a Redis blip must
 * not stop every device.
 */
export class RedisRateLimiter implements RateLimiter {
  private readonly failing = new ThrottledWarning(new Logger('RateLimits'));

  private constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  static async connect(shared: SharedRedis): Promise<RedisRateLimiter> {
    const [client] = await shared.connect(1, (redis) => redis.defineCommand('vtgRateHit', { numberOfKeys: 1, lua: HIT_SCRIPT }));
    client.options.commandTimeout = COMMAND_TIMEOUT_MS;
    return new RedisRateLimiter(client, shared.keyPrefix);
  }

  async hit(key: string, limit: number, windowMs: number): Promise<RateDecision> {
    try {
      const hit = (this.redis as unknown as { vtgRateHit: HitCommand }).vtgRateHit;
      const [count, ttl] = await hit.call(this.redis, `${this.prefix}rate:${key}`, windowMs);
      return count <= limit ? ALLOWED : { allowed: false, retryAfterMs: ttl };
    } catch (error) {
      this.failing.warn(`Rate limits are not enforced while Redis fails: ${(error as Error).message}`);
      return ALLOWED;
    }
  }

  async close(): Promise<void> {
    await this.redis.quit().catch(() => undefined);
  }
}
