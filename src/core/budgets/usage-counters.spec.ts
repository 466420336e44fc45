import type Redis from 'ioredis';
import { inspector, removeKeys, TEST_REDIS_URL, uniquePrefix } from '../../../test/support/redis';
import { RedisConnections } from '../state/shared-redis';
import { MemoryUsageCounters } from './memory-usage-counters';
import { RedisUsageCounters } from './redis-usage-counters';
import type { UsageCounters } from './usage-counters';

const HOUR = 3_600_000;

describe('MemoryUsageCounters', () => {
  it('forgets a counter once its period is over, and sweeps expired ones away', async () => {
    let now = 1_000;
    const counters = new MemoryUsageCounters(() => now);
    await counters.add([{ key: 'a', amount: 5, expiresAt: now + HOUR }]);
    expect(await counters.read(['a', 'b'])).toEqual([5, 0]);
    now += HOUR;
    expect(await counters.read(['a'])).toEqual([0]);
    expect(await counters.spend([{ key: 'a', limit: 1, amount: 1, expiresAt: now + HOUR }])).toEqual({ allowed: true });
    expect(await counters.read(['a'])).toEqual([1]);
  });

  it('keeps its memory bounded: counters of ended periods make room for new ones', async () => {
    let now = 0;
    const counters = new MemoryUsageCounters(() => now);
    for (let i = 0; i < 10_000; i += 1) await counters.add([{ key: `old-${i}`, amount: 1, expiresAt: 10 }]);
    now = 20;
    await counters.add([{ key: 'new', amount: 1, expiresAt: 100 }]);
    expect((counters as unknown as { counters: Map<string, unknown> }).counters.size).toBe(1);
  });
});

/** The same behaviour of both stores: what the gateway relies on, whichever `REDIS_URL` chose. */
describe.each([
  ['in memory', false],
  ['in Redis', true],
])('UsageCounters %s', (_name, withRedis) => {
  let inspect: Redis | undefined;
  let prefix: string;
  const made: UsageCounters[] = [];

  beforeAll(async () => {
    if (withRedis) inspect = await inspector();
  });
  afterAll(async () => {
    await inspect?.quit();
  });
  beforeEach(() => {
    prefix = uniquePrefix();
  });
  afterEach(async () => {
    await Promise.all(made.splice(0).map((counters) => counters.close()));
    if (inspect) await removeKeys(inspect, prefix);
  });

  /** A store on the test's prefix: each call a new connection in Redis (another instance), the same store in memory. */
  let memory: MemoryUsageCounters | undefined;
  async function open(): Promise<UsageCounters> {
    const counters = withRedis ? await RedisUsageCounters.connect(new RedisConnections(TEST_REDIS_URL, prefix)) : (memory ??= new MemoryUsageCounters());
    made.push(counters);
    return counters;
  }
  afterEach(() => {
    memory = undefined;
  });

  it('adds to every counter or to none: a counter at its limit refuses the whole spend and names itself', async () => {
    const counters = await open();
    const expiresAt = Date.now() + HOUR;
    const spend = (amount: number) => [
      { key: 'device', limit: 10, amount, expiresAt },
      { key: 'principal', limit: 100, amount, expiresAt },
      { key: 'unlimited', amount, expiresAt },
    ];
    expect(await counters.spend(spend(6))).toEqual({ allowed: true });
    // Below the limit, a spend passes whatever it costs: that one may end past it.
    expect(await counters.spend(spend(6))).toEqual({ allowed: true });
    expect(await counters.read(['device', 'principal', 'unlimited'])).toEqual([12, 12, 12]);
    expect(await counters.spend(spend(1))).toEqual({ allowed: false, refusedAt: 0 });
    expect(await counters.read(['device', 'principal', 'unlimited'])).toEqual([12, 12, 12]);
    // A check without an amount spends nothing but is refused the same.
    expect(
      await counters.spend([
        { key: 'principal', limit: 100, amount: 0, expiresAt },
        { key: 'device', limit: 10, amount: 0, expiresAt },
      ]),
    ).toEqual({
      allowed: false,
      refusedAt: 1,
    });
  });

  it('takes a reservation back, never below zero', async () => {
    const counters = await open();
    const expiresAt = Date.now() + HOUR;
    await counters.spend([{ key: 'k', limit: 50, amount: 30, expiresAt }]);
    await counters.add([{ key: 'k', amount: -20, expiresAt }]);
    expect(await counters.read(['k'])).toEqual([10]);
    await counters.add([{ key: 'k', amount: -20, expiresAt }]);
    expect(await counters.read(['k'])).toEqual([0]);
  });

  it('lets exactly the allowed count through when 50 spends race on one budget, across instances', async () => {
    // A budget of 10 spends of 7 units, less one unit: the 10th passes below the limit and ends 6 past it.
    const limit = 10 * 7 - 1;
    const expiresAt = Date.now() + HOUR;
    const instances = await Promise.all([open(), open()]);
    const outcomes = await Promise.all(Array.from({ length: 50 }, (_, i) => instances[i % 2].spend([{ key: 'raced', limit, amount: 7, expiresAt }])));
    expect(outcomes.filter((outcome) => outcome.allowed)).toHaveLength(10);
    const [used] = await instances[0].read(['raced']);
    expect(used).toBe(70);
    expect(used - limit).toBeLessThanOrEqual(7);
  });

  it("stores the owners' limits, and clears them with an empty set", async () => {
    const [a, b] = await Promise.all([open(), open()]);
    expect(await a.deviceLimits('kitchen')).toBeUndefined();
    await a.setDeviceLimits('kitchen', { llm_tokens_per_day: 500 });
    expect(await b.deviceLimits('kitchen')).toEqual({ llm_tokens_per_day: 500 });
    await b.setDeviceLimits('kitchen', {});
    expect(await a.deviceLimits('kitchen')).toBeUndefined();
  });

  if (withRedis) {
    it('gives every counter the end of its period as its expiry', async () => {
      const counters = await open();
      const expiresAt = Date.now() + HOUR;
      await counters.spend([{ key: 'timed', limit: 5, amount: 1, expiresAt }]);
      const ttl = await inspect!.pttl(`${prefix}budget:timed`);
      expect(ttl).toBeGreaterThan(HOUR - 5_000);
      expect(ttl).toBeLessThanOrEqual(HOUR);
    });
  }
});
