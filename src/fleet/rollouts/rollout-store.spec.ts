import type Redis from 'ioredis';
import { inspector, removeKeys, TEST_REDIS_URL, uniquePrefix } from '../../../test/support/redis';
import { RedisConnections } from '../../core/state/shared-redis';
import type { Rollout } from './rollout-model';
import { MemoryRolloutStore, RedisRolloutStore, RolloutStore } from './rollout-store';

const rollout = (id: string, revision = 1, percent = 10): Rollout => ({
  id,
  firmware_id: 'fw',
  group: { percent },
  state: 'active',
  owner: 'ops',
  created_at: '2026-11-01T00:00:00.000Z',
  updated_at: '2026-11-01T00:00:00.000Z',
  revision,
});

describe.each([
  ['in memory', async () => ({ store: new MemoryRolloutStore() as RolloutStore, other: undefined as RolloutStore | undefined })],
  [
    'in Redis, shared by two instances',
    async () => {
      const connections = new RedisConnections(TEST_REDIS_URL, prefix);
      return { store: (await RedisRolloutStore.connect(connections)) as RolloutStore, other: (await RedisRolloutStore.connect(connections)) as RolloutStore };
    },
  ],
])('the rollout store %s', (_name, open) => {
  let store: RolloutStore;
  let other: RolloutStore | undefined;

  beforeEach(async () => {
    ({ store, other } = await open());
  });

  afterEach(async () => {
    await store.close();
    await other?.close();
  });

  it('creates a record once, and no more than the most it holds', async () => {
    expect(await store.rollouts.create(rollout('a'), 2)).toBe('ok');
    expect(await store.rollouts.create(rollout('a'), 2)).toBe('exists');
    expect(await store.rollouts.create(rollout('b'), 2)).toBe('ok');
    expect(await store.rollouts.create(rollout('c'), 2)).toBe('full');
    expect((await (other ?? store).rollouts.all()).map((record) => record.id).sort()).toEqual(['a', 'b']);
  });

  it('writes a change only over the revision it was read at, so of two changes at once one is told', async () => {
    await store.rollouts.create(rollout('a'), 10);
    const [first, second] = await Promise.all([store.rollouts.replace(rollout('a', 2, 30)), (other ?? store).rollouts.replace(rollout('a', 2, 20))]);
    expect([first, second].sort()).toEqual(['ok', 'stale']);
    expect((await store.rollouts.get('a'))?.revision).toBe(2);
    expect(await store.rollouts.replace(rollout('gone', 2))).toBe('gone');
    expect(await store.rollouts.remove('a', 1)).toBe('stale');
    expect(await store.rollouts.remove('a', 2)).toBe('ok');
    expect(await store.rollouts.get('a')).toBeUndefined();
  });
});

let prefix: string;
let redis: Redis;
beforeAll(async () => {
  prefix = uniquePrefix();
  redis = await inspector();
});
afterAll(async () => {
  await removeKeys(redis, prefix);
  await redis.quit();
});
afterEach(async () => {
  await removeKeys(redis, prefix);
});
