import type Redis from 'ioredis';
import { RedisUnavailableError } from '../../src/core/redis/redis-connection';
import { RedisSessionPresence } from '../../src/assistant/session/redis-session-presence';
import { RedisSessionStore } from '../../src/assistant/session/redis-session.store';
import type { Session } from '../../src/assistant/session/session';
import { inspector, removeKeys, TEST_REDIS_URL, uniquePrefix } from '../support/redis';
import { RedisConnections } from '../../src/core/state/shared-redis';

const session = (id: string, owner = 'alice'): Session => ({
  id,
  owner,
  createdAt: 1000,
  lastActiveAt: 1000,
  settings: { temperature: 0.7, maxTokens: 2048, enableContext: false },
  history: [],
});
const ref = (id: string, owner = 'alice') => ({ id, owner });

describe('RedisSessionStore, against a real Redis', () => {
  const prefix = uniquePrefix();
  let redis: Redis;
  let store: RedisSessionStore;

  beforeAll(async () => {
    redis = await inspector();
    store = await RedisSessionStore.connect(new RedisConnections(TEST_REDIS_URL, prefix), 60_000);
  });
  afterAll(async () => {
    await removeKeys(redis, prefix);
    await store.onApplicationShutdown();
    redis.disconnect();
  });

  it('stores a session and reads it back with its types', async () => {
    await store.create(session('s1'));
    await store.updateSettings(ref('s1'), { language: 'en', enableContext: true });
    await store.appendHistory(
      ref('s1'),
      [
        { role: 'user', content: '你好' },
        { role: 'assistant', content: 'hi' },
      ],
      10,
    );
    expect(await store.get('s1')).toEqual({
      id: 's1',
      owner: 'alice',
      createdAt: 1000,
      lastActiveAt: expect.any(Number),
      settings: { temperature: 0.7, maxTokens: 2048, enableContext: true, language: 'en' },
      history: [
        { role: 'user', content: '你好' },
        { role: 'assistant', content: 'hi' },
      ],
    });
    expect(await store.get('missing')).toBeUndefined();
  });

  it('refuses to create a session twice', async () => {
    await store.create(session('dup'));
    await expect(store.create(session('dup'))).rejects.toThrow(/already exists/);
  });

  it("expires all of a session's keys together after the timeout, and each write restarts it", async () => {
    await store.create(session('ttl'));
    await store.appendHistory(ref('ttl'), [{ role: 'user', content: 'x' }], 10);
    const keys = await redis.keys(`${prefix}session:{ttl}*`);
    expect(keys).toHaveLength(3);
    for (const key of keys) {
      const ttl = await redis.pttl(key);
      expect(ttl).toBeGreaterThan(55_000);
      expect(ttl).toBeLessThanOrEqual(60_000);
    }
    expect(keys.every((key) => key.includes('{ttl}'))).toBe(true);

    const shortLived = await RedisSessionStore.connect(new RedisConnections(TEST_REDIS_URL, prefix), 300);
    try {
      await shortLived.create(session('brief'));
      await new Promise((resolve) => setTimeout(resolve, 200));
      await shortLived.touch(ref('brief'));
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(await shortLived.get('brief')).toBeDefined();
      await new Promise((resolve) => setTimeout(resolve, 400));
      expect(await shortLived.get('brief')).toBeUndefined();
      expect(await redis.keys(`${prefix}session:{brief}*`)).toEqual([]);
    } finally {
      await shortLived.onApplicationShutdown();
    }
  });

  it('sets and clears single settings, and never writes to a session that is gone', async () => {
    await store.create(session('settings'));
    expect(await store.updateSettings(ref('settings'), { character: 'pirate', temperature: 0.2 })).toBe(true);
    expect(await store.updateSettings(ref('settings'), { character: undefined })).toBe(true);
    expect((await store.get('settings'))!.settings).toEqual({ temperature: 0.2, maxTokens: 2048, enableContext: false });
    expect(await store.updateSettings(ref('ghost'), { temperature: 0 })).toBe(false);
    await store.appendHistory(ref('ghost'), [{ role: 'user', content: 'x' }], 10);
    await store.touch(ref('ghost'));
    expect(await redis.keys(`${prefix}session:{ghost}*`)).toEqual([]);
  });

  it('caps the history atomically, and clears it with a limit of 0', async () => {
    await store.create(session('cap'));
    for (let i = 1; i <= 6; i += 1) await store.appendHistory(ref('cap'), [{ role: 'user', content: String(i) }], 4);
    expect((await store.get('cap'))!.history.map((m) => m.content)).toEqual(['3', '4', '5', '6']);
    await store.appendHistory(ref('cap'), [{ role: 'user', content: '7' }], 0);
    expect((await store.get('cap'))!.history).toEqual([]);
  });

  it('loses no update when many requests touch one session at once', async () => {
    await store.create(session('busy'));
    await Promise.all([
      ...Array.from({ length: 100 }, (_, i) => store.appendHistory(ref('busy'), [{ role: 'user', content: `m${i}` }], 1000)),
      store.updateSettings(ref('busy'), { language: 'fr' }),
      store.updateSettings(ref('busy'), { character: 'pirate' }),
      store.updateSettings(ref('busy'), { temperature: 0.1 }),
      store.updateSettings(ref('busy'), { maxTokens: 99 }),
    ]);
    const after = (await store.get('busy'))!;
    expect(new Set(after.history.map((m) => m.content)).size).toBe(100);
    expect(after.settings).toEqual({ temperature: 0.1, maxTokens: 99, enableContext: false, language: 'fr', character: 'pirate' });
  });

  it("keeps an owner's most recently active sessions, dropping the ones Redis expired from its index first", async () => {
    const at = (id: string, time: number, owner = 'trimmed') => ({ ...session(id, owner), createdAt: time, lastActiveAt: time });
    for (const [index, id] of ['t0', 't1', 't2', 't3'].entries()) await store.create(at(id, 1000 + index));
    await store.create(at('other', 999, 'someone-else'));
    await store.touch(ref('t1', 'trimmed'));
    // What Redis leaves of a session it expired: its id in the owner's index, and no keys.
    await redis.del(...(await redis.keys(`${prefix}session:{t0}*`)));
    expect(await store.trimOwner('trimmed', 3)).toBe(0);
    expect(await store.trimOwner('trimmed', 2)).toBe(1);
    expect(await Promise.all(['t1', 't2', 't3', 'other'].map(async (id) => (await store.get(id)) !== undefined))).toEqual([true, false, true, true]);
    expect(await redis.zrange(`${prefix}sessions-of:trimmed`, 0, -1)).toEqual(['t3', 't1']);
    expect(await store.trimOwner('trimmed', 2)).toBe(0);
  });

  it("moves a session's score in its owner's index to its lastActiveAt with every write, and takes it out on delete", async () => {
    const index = `${prefix}sessions-of:scored`;
    const scoreAndStamp = async (id: string) => [Number(await redis.zscore(index, id)), (await store.get(id))!.lastActiveAt];
    await store.create({ ...session('scored', 'scored'), createdAt: 5, lastActiveAt: 5 });
    expect(await scoreAndStamp('scored')).toEqual([5, 5]);
    for (const write of [
      () => store.touch(ref('scored', 'scored')),
      () => store.updateSettings(ref('scored', 'scored'), { language: 'de' }),
      () => store.appendHistory(ref('scored', 'scored'), [{ role: 'user', content: 'x' }], 10),
    ]) {
      const [before] = await scoreAndStamp('scored');
      await new Promise((resolve) => setTimeout(resolve, 2));
      await write();
      const [score, stamp] = await scoreAndStamp('scored');
      expect(score).toBe(stamp);
      expect(score).toBeGreaterThan(before);
    }
    expect(await redis.pttl(index)).toBeGreaterThan(55_000);
    expect(await store.touch(ref('scored', 'not-the-owner'))).toBeUndefined();
    expect(await redis.zscore(`${prefix}sessions-of:not-the-owner`, 'scored')).toBeNull();
    expect(await store.delete(ref('scored', 'scored'))).toBe(true);
    expect(await redis.zscore(index, 'scored')).toBeNull();
  });

  it('deletes a session', async () => {
    await store.create(session('gone'));
    await store.appendHistory(ref('gone'), [{ role: 'user', content: 'x' }], 10);
    expect(await store.delete(ref('gone'))).toBe(true);
    expect(await store.delete(ref('gone'))).toBe(false);
    expect(await store.get('gone')).toBeUndefined();
  });

  it('tells the other instances, and only them, which sessions it holds', async () => {
    const here = await RedisSessionPresence.connect(new RedisConnections(TEST_REDIS_URL, prefix));
    const other = await RedisSessionPresence.connect(new RedisConnections(TEST_REDIS_URL, prefix));
    try {
      const heardHere: string[] = [];
      const heardThere: string[] = [];
      here.onAttachedElsewhere((id) => heardHere.push(id));
      other.onAttachedElsewhere((id) => heardThere.push(id));
      await here.announceAttach('from-here');
      await other.announceAttach('from-there');
      const deadline = Date.now() + 5000;
      while ((heardHere.length === 0 || heardThere.length === 0) && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      expect(heardHere).toEqual(['from-there']);
      expect(heardThere).toEqual(['from-here']);
    } finally {
      await Promise.all([here.onApplicationShutdown(), other.onApplicationShutdown()]);
    }
  });

  it('fails to connect with a clear error naming REDIS_URL, without the password', async () => {
    const error = await RedisSessionStore.connect(new RedisConnections('redis://:hunter2@127.0.0.1:1', prefix), 1000).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RedisUnavailableError);
    expect((error as Error).message).toBe('Cannot reach Redis at redis://:***@127.0.0.1:1 (REDIS_URL): connect ECONNREFUSED 127.0.0.1:1');
  });
});
