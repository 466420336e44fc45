import { loadGatewayConfig } from '../../config/gateway-config';
import { GatewayError } from '../../core/errors/gateway-error';
import { MemorySessionStore } from './memory-session.store';
import { LocalSessionPresence } from './session-presence';
import type { SessionStore } from './session-store';
import { SessionService } from './session.service';

describe('MemorySessionStore', () => {
  let now = 1_000;
  const store = new MemorySessionStore(100, () => now);
  const session = (id: string) => ({
    id,
    owner: 'p',
    createdAt: now,
    lastActiveAt: now,
    settings: { temperature: 0.7, maxTokens: 10, enableContext: false },
    history: [],
  });
  const ref = (id: string) => ({ id, owner: 'p' });

  it('never changes what it handed out: writes replace settings and history', async () => {
    await store.create(session('a'));
    const before = await store.get('a');
    await store.appendHistory(ref('a'), [{ role: 'user', content: 'x' }], 10);
    await store.updateSettings(ref('a'), { temperature: 0.1 });
    expect(before!.history).toEqual([]);
    expect(before!.settings.temperature).toBe(0.7);
    expect((await store.get('a'))!).toMatchObject({ history: [{ role: 'user', content: 'x' }], settings: { temperature: 0.1 } });
  });

  it('keeps the last `limit` messages', async () => {
    await store.create(session('h'));
    for (let i = 1; i <= 4; i += 1) await store.appendHistory(ref('h'), [{ role: 'user', content: String(i) }], 3);
    expect((await store.get('h'))!.history.map((m) => m.content)).toEqual(['2', '3', '4']);
    await store.appendHistory(ref('h'), [{ role: 'user', content: '5' }], 0);
    expect((await store.get('h'))!.history).toEqual([]);
  });

  it("keeps an owner's most recently active sessions, and only that owner's", async () => {
    const of = (id: string, owner: string) => ({ ...session(id), owner });
    for (const id of ['o1', 'o2', 'o3']) {
      await store.create(of(id, 'owner'));
      now += 1;
    }
    await store.create(of('x1', 'stranger'));
    await store.touch({ id: 'o1', owner: 'owner' });
    expect(await store.trimOwner('owner', 3)).toBe(0);
    expect(await store.trimOwner('owner', 1)).toBe(2);
    expect([await store.get('o1'), await store.get('o2'), await store.get('o3'), await store.get('x1')].map(Boolean)).toEqual([true, false, false, true]);
  });

  it('trims an owner over its cap by walking only the sessions it removes, however many others the store holds', async () => {
    const crowded = new MemorySessionStore(100, () => now);
    for (let i = 0; i < 5_000; i += 1) await crowded.create({ ...session(`other-${i}`), owner: `owner-${i % 50}` });
    for (let i = 0; i < 10; i += 1) await crowded.create({ ...session(`mine-${i}`), owner: 'me' });
    await crowded.touch({ id: 'mine-0', owner: 'me' });
    let removed = 0;
    const walked = await entriesWalked(async () => (removed = await crowded.trimOwner('me', 5)));
    expect(removed).toBe(5);
    expect(walked).toBeLessThanOrEqual(5);
    expect(await Promise.all(['mine-0', 'mine-1', 'mine-5', 'mine-6', 'mine-9'].map(async (id) => (await crowded.get(id)) !== undefined))).toEqual([
      true,
      false,
      false,
      true,
      true,
    ]);
    expect(crowded.size).toBe(5_005);
  });

  it('forgets idle sessions, and touch keeps them', async () => {
    await store.create(session('idle'));
    await store.create(session('busy'));
    now += 60;
    await store.touch(ref('busy'));
    now += 60;
    expect(await store.get('idle')).toBeUndefined();
    expect(await store.get('busy')).toBeDefined();
    expect(await store.updateSettings(ref('idle'), { temperature: 0 })).toBe(false);
    expect(await store.sweep()).toBeGreaterThanOrEqual(1);
  });
});

/** How many Map and Set entries `work` walks through (any iteration of either): its cost, counted rather than timed. */
async function entriesWalked(work: () => Promise<unknown>): Promise<number> {
  let walked = 0;
  const restore: (() => void)[] = [];
  for (const prototype of [Map.prototype, Set.prototype] as unknown as Record<PropertyKey, (...args: unknown[]) => Iterable<unknown>>[]) {
    for (const key of ['entries', 'keys', 'values', Symbol.iterator]) {
      const original = prototype[key];
      prototype[key] = function* (this: unknown) {
        for (const entry of original.call(this)) {
          walked += 1;
          yield entry;
        }
      };
      restore.push(() => (prototype[key] = original));
    }
  }
  try {
    await work();
  } finally {
    restore.forEach((undo) => undo());
  }
  return walked;
}

describe('SessionService', () => {
  const config = loadGatewayConfig({ CLOUD_SESSION_MAX_HISTORY: '2', LLM_TEMPERATURE: '0.3', LLM_ENABLE_CONTEXT: 'true' });
  let service: SessionService;

  beforeEach(() => {
    service = new SessionService(new MemorySessionStore(config.session.timeoutMs), new LocalSessionPresence(), config);
  });

  it('creates sessions with the configured defaults', async () => {
    const session = await service.create('alice');
    expect(session).toMatchObject({ owner: 'alice', settings: { temperature: 0.3, maxTokens: 2048, enableContext: true }, history: [] });
  });

  it('resumes only for the owner, with one message for every refusal', async () => {
    const { id } = await service.create('alice');
    await expect(service.resume(id, 'alice')).resolves.toMatchObject({ id });
    await expect(service.resume(id, 'bob')).rejects.toThrow(/does not exist, has expired, or belongs to another client/);
    await expect(service.resume('missing', 'alice')).rejects.toMatchObject({ code: 'SESSION_ERROR' });
  });

  it('sets and clears settings', async () => {
    const { id } = await service.create('alice');
    await service.configure(id, { language: 'en', character: 'pirate' });
    await service.configure(id, { character: undefined, temperature: 0.1 });
    expect((await service.require(id)).settings).toEqual({ temperature: 0.1, maxTokens: 2048, enableContext: true, language: 'en' });
    await expect(service.configure('gone', { temperature: 0 })).rejects.toMatchObject({ code: 'SESSION_ERROR' });
  });

  it('records exchanges within CLOUD_SESSION_MAX_HISTORY', async () => {
    const { id } = await service.create('alice');
    await service.recordExchange(id, 'q1', 'a1');
    await service.recordExchange(id, 'q2', 'a2');
    expect((await service.require(id)).history).toEqual([
      { role: 'user', content: 'q2' },
      { role: 'assistant', content: 'a2' },
    ]);
  });

  it('tells the previous connection when another one takes its session over', async () => {
    const { id } = await service.create('alice');
    const first = jest.fn();
    const second = jest.fn();
    const session = { id, owner: 'alice' };
    service.attach(session, 'c1', first);
    service.attach(session, 'c1', first);
    expect(first).not.toHaveBeenCalled();
    service.attach(session, 'c2', second);
    expect(first).toHaveBeenCalledTimes(1);
    service.detach(id, 'c1');
    service.attach(session, 'c3', jest.fn());
    expect(second).toHaveBeenCalledTimes(1);
  });

  it('turns a failing store into SESSION_ERROR', async () => {
    const broken: SessionStore = {
      create: () => Promise.reject(new Error('ECONNREFUSED 127.0.0.1:6379')),
      get: () => Promise.reject(new Error('down')),
      updateSettings: () => Promise.reject(new Error('down')),
      appendHistory: () => Promise.reject(new Error('down')),
      touch: () => Promise.reject(new Error('down')),
      delete: () => Promise.reject(new Error('down')),
      trimOwner: () => Promise.reject(new Error('down')),
      sweep: () => Promise.reject(new Error('down')),
      probe: () => Promise.resolve({ up: false, problem: 'down' }),
      ready: false,
    };
    const failing = new SessionService(broken, new LocalSessionPresence(), config);
    const error = await failing.create('alice').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GatewayError);
    expect(error).toMatchObject({ code: 'SESSION_ERROR', message: 'Session store unavailable' });
    await expect(failing.sweep()).resolves.toBe(0);
  });
});
