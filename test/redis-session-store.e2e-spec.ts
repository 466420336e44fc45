import type Redis from 'ioredis';
import { RedisUnavailableError } from '../src/core/session/redis-connection';
import { RedisSessionPresence } from '../src/core/session/redis-session-presence';
import { RedisSessionStore } from '../src/core/session/redis-session.store';
import type { Session } from '../src/core/session/session';
import { inspector, removeKeys, TEST_REDIS_URL, uniquePrefix } from './support/redis';

const session = (id: string, owner = 'alice'): Session => ({
  id,
  owner,
  createdAt: 1000,
  lastActiveAt: 1000,
  settings: { temperature: 0.7, maxTokens: 2048, enableContext: false },
  history: [],
});

describe('RedisSessionStore, against a real Redis', () => {
  const prefix = uniquePrefix();
  let redis: Redis;
  let store: RedisSessionStore;

  beforeAll(async () => {
    redis = await inspector();
    store = await RedisSessionStore.connect(TEST_REDIS_URL, prefix, 60_000);
  });
  afterAll(async () => {
    await removeKeys(redis, prefix);
    await store.onApplicationShutdown();
    redis.disconnect();
  });

  it('stores a session and reads it back with its types', async () => {
    await store.create(session('s1'));
    await store.updateSettings('s1', { language: 'en', enableContext: true });
    await store.appendHistory('s1', [{ role: 'user', content: '你好' }, { role: 'assistant', content: 'hi' }], 10);
    expect(await store.get('s1')).toEqual({
      id: 's1',
      owner: 'alice',
      createdAt: 1000,
      lastActiveAt: expect.any(Number),
      settings: { temperature: 0.7, maxTokens: 2048, enableContext: true, language: 'en' },
      history: [{ role: 'user', content: '你好' }, { role: 'assistant', content: 'hi' }],
    });
    expect(await store.get('missing')).toBeUndefined();
  });

  it('refuses to create a session twice', async () => {
    await store.create(session('dup'));
    await expect(store.create(session('dup'))).rejects.toThrow(/already exists/);
  });

  it('expires all of a session\'s keys together after the timeout, and each write restarts it', async () => {
    await store.create(session('ttl'));
    await store.appendHistory('ttl', [{ role: 'user', content: 'x' }], 10);
    const keys = await redis.keys(`${prefix}session:{ttl}*`);
    expect(keys).toHaveLength(3);
    for (const key of keys) {
      const ttl = await redis.pttl(key);
      expect(ttl).toBeGreaterThan(55_000);
      expect(ttl).toBeLessThanOrEqual(60_000);
    }
    expect(keys.every((key) => key.includes('{ttl}'))).toBe(true);

    const shortLived = await RedisSessionStore.connect(TEST_REDIS_URL, prefix, 300);
    try {
      await shortLived.create(session('brief'));
      await new Promise((resolve) => setTimeout(resolve, 200));
      await shortLived.touch('brief');
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
    expect(await store.updateSettings('settings', { character: 'pirate', temperature: 0.2 })).toBe(true);
    expect(await store.updateSettings('settings', { character: undefined })).toBe(true);
    expect((await store.get('settings'))!.settings).toEqual({ temperature: 0.2, maxTokens: 2048, enableContext: false });
    expect(await store.updateSettings('ghost', { temperature: 0 })).toBe(false);
    await store.appendHistory('ghost', [{ role: 'user', content: 'x' }], 10);
    await store.touch('ghost');
    expect(await redis.keys(`${prefix}session:{ghost}*`)).toEqual([]);
  });

  it('caps the history atomically, and clears it with a limit of 0', async () => {
    await store.create(session('cap'));
    for (let i = 1; i <= 6; i += 1) await store.appendHistory('cap', [{ role: 'user', content: String(i) }], 4);
    expect((await store.get('cap'))!.history.map((m) => m.content)).toEqual(['3', '4', '5', '6']);
    await store.appendHistory('cap', [{ role: 'user', content: '7' }], 0);
    expect((await store.get('cap'))!.history).toEqual([]);
  });

  it('loses no update when many requests touch one session at once', async () => {
    await store.create(session('busy'));
    await Promise.all([
      ...Array.from({ length: 100 }, (_, i) => store.appendHistory('busy', [{ role: 'user', content: `m${i}` }], 1000)),
      store.updateSettings('busy', { language: 'fr' }),
      store.updateSettings('busy', { character: 'pirate' }),
      store.updateSettings('busy', { temperature: 0.1 }),
      store.updateSettings('busy', { maxTokens: 99 }),
    ]);
    const after = (await store.get('busy'))!;
    expect(new Set(after.history.map((m) => m.content)).size).toBe(100);
    expect(after.settings).toEqual({ temperature: 0.1, maxTokens: 99, enableContext: false, language: 'fr', character: 'pirate' });
  });

  it("keeps an owner's newest sessions by activity, dropping gone ones from its index first", async () => {
    const at = (id: string, time: number, owner = 'trimmed') => ({ ...session(id, owner), createdAt: time, lastActiveAt: time });
    for (const [index, id] of ['t1', 't2', 't3', 't4'].entries()) await store.create(at(id, 1000 + index));
    await store.create(at('other', 1000, 'someone-else'));
    await store.touch('t1');
    await store.delete('t4');
    expect(await store.trimOwner('trimmed', 3)).toBe(0);
    expect(await store.trimOwner('trimmed', 2)).toBe(1);
    expect(await Promise.all(['t1', 't2', 't3', 'other'].map(async (id) => (await store.get(id)) !== undefined))).toEqual([true, false, true, true]);
    expect(await redis.zrange(`${prefix}sessions-of:trimmed`, 0, -1)).toEqual(['t1', 't3']);
    expect(await store.trimOwner('trimmed', 2)).toBe(0);
  });

  it('deletes a session', async () => {
    await store.create(session('gone'));
    await store.appendHistory('gone', [{ role: 'user', content: 'x' }], 10);
    expect(await store.delete('gone')).toBe(true);
    expect(await store.delete('gone')).toBe(false);
    expect(await store.get('gone')).toBeUndefined();
  });

  it('tells the other instances, and only them, which sessions it holds', async () => {
    const here = await RedisSessionPresence.connect(TEST_REDIS_URL, prefix);
    const other = await RedisSessionPresence.connect(TEST_REDIS_URL, prefix);
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
    const error = await RedisSessionStore.connect('redis://:hunter2@127.0.0.1:1', prefix, 1000).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RedisUnavailableError);
    expect((error as Error).message).toBe('Cannot reach Redis at redis://:***@127.0.0.1:1 (REDIS_URL): connect ECONNREFUSED 127.0.0.1:1');
  });
});
