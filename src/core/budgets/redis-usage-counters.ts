import type Redis from 'ioredis';
import { COMMAND_TIMEOUT_MS } from '../redis/redis-connection';
import type { SharedRedis } from '../state/shared-redis';
import type { BudgetLimits } from './budget-limits';
import type { CounterSpend, SpendOutcome, UsageCounters } from './usage-counters';

/**
 * The atomic spend: KEYS are the counters; ARGV holds, for each, its limit (-1: none), its amount
 * and its expiry (epoch ms). Every limit is checked before anything is added, in one script, so
 * two instances spending at once never both pass the last unit. Returns 0, or the 1-based index
 * of the first counter at its limit.
 */
const SPEND_SCRIPT = `
local n = #KEYS
for i = 1, n do
  local limit = tonumber(ARGV[3 * i - 2])
  if limit >= 0 and tonumber(redis.call('GET', KEYS[i]) or '0') >= limit then return i end
end
for i = 1, n do
  redis.call('INCRBY', KEYS[i], ARGV[3 * i - 1])
  redis.call('PEXPIREAT', KEYS[i], ARGV[3 * i])
end
return 0`;

/** Adds (or, negative, takes back) amounts, never below zero, each counter keeping its period's expiry. */
const ADD_SCRIPT = `
for i = 1, #KEYS do
  local value = redis.call('INCRBY', KEYS[i], ARGV[2 * i - 1])
  if value < 0 then redis.call('SET', KEYS[i], 0) end
  redis.call('PEXPIREAT', KEYS[i], ARGV[2 * i])
end
return 0`;

type SpendCommand = (keyCount: number, ...keysThenArgs: (string | number)[]) => Promise<number>;

/**
 * {@link UsageCounters} in Redis (`<prefix>budget:...` counters expiring at the end of their
 * period, `<prefix>budget-limits:<device>` the owners' limits), shared by every instance on the
 * same Redis and prefix.
 */
export class RedisUsageCounters implements UsageCounters {
  private constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  static async connect(shared: SharedRedis): Promise<RedisUsageCounters> {
    const [client] = await shared.connect(1, (redis) => {
      redis.defineCommand('vtgBudgetSpend', { lua: SPEND_SCRIPT });
      redis.defineCommand('vtgBudgetAdd', { lua: ADD_SCRIPT });
    });
    client.options.commandTimeout = COMMAND_TIMEOUT_MS;
    return new RedisUsageCounters(client, shared.keyPrefix);
  }

  async spend(counters: CounterSpend[]): Promise<SpendOutcome> {
    if (counters.length === 0) return { allowed: true };
    const args = counters.flatMap(({ limit, amount, expiresAt }) => [limit ?? -1, Math.round(amount), expiresAt]);
    const refused = await this.command('vtgBudgetSpend')(counters.length, ...counters.map(({ key }) => this.key(key)), ...args);
    return refused === 0 ? { allowed: true } : { allowed: false, refusedAt: refused - 1 };
  }

  async add(counters: Omit<CounterSpend, 'limit'>[]): Promise<void> {
    if (counters.length === 0) return;
    const args = counters.flatMap(({ amount, expiresAt }) => [Math.round(amount), expiresAt]);
    await this.command('vtgBudgetAdd')(counters.length, ...counters.map(({ key }) => this.key(key)), ...args);
  }

  async read(keys: string[]): Promise<number[]> {
    if (keys.length === 0) return [];
    const values = await this.redis.mget(keys.map((key) => this.key(key)));
    return values.map((value) => Math.max(0, Number(value ?? 0)));
  }

  async deviceLimits(deviceId: string): Promise<BudgetLimits | undefined> {
    const stored = await this.redis.get(`${this.prefix}budget-limits:${deviceId}`);
    return stored === null ? undefined : (JSON.parse(stored) as BudgetLimits);
  }

  async setDeviceLimits(deviceId: string, limits: BudgetLimits | undefined): Promise<void> {
    const key = `${this.prefix}budget-limits:${deviceId}`;
    if (!limits || Object.keys(limits).length === 0) await this.redis.del(key);
    else await this.redis.set(key, JSON.stringify(limits));
  }

  async close(): Promise<void> {
    await this.redis.quit().catch(() => undefined);
  }

  private key(key: string): string {
    return `${this.prefix}budget:${key}`;
  }

  private command(name: 'vtgBudgetSpend' | 'vtgBudgetAdd'): SpendCommand {
    const command = (this.redis as unknown as Record<string, SpendCommand>)[name];
    return (...args) => command.apply(this.redis, args);
  }
}
