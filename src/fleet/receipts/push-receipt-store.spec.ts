import type Redis from 'ioredis';
import { inspector, removeKeys, uniquePrefix } from '../../../test/support/redis';
import { MemoryPushReceipts, PushReceiptStore, RedisPushReceipts, ReceiptBounds } from './push-receipt-store';
import { newRecord } from './push-state';

const record = (id: string) => newRecord({ id, device: 'kitchen', kind: 'say', by: 'alice', owner: 'alice' });

/** What every store does alike; `bounds` are the store's. */
function behavesAsAReceiptStore(open: (bounds: ReceiptBounds) => Promise<PushReceiptStore>) {
  const bounds = { ttlMs: 60_000, max: 1000 };

  it('keeps a receipt and moves it only as the state machine allows, whatever order the reports come in', async () => {
    const store = await open(bounds);
    await store.create([record('p1')]);
    expect(await store.move('p1', { state: 'spoken' })).toBeUndefined(); // not sent yet
    expect((await store.move('p1', { state: 'sent' }))?.state).toBe('sent');
    expect((await store.move('p1', { state: 'sent' }))?.state).toBeUndefined(); // a repeat
    const spoken = await store.move('p1', { state: 'spoken' });
    expect(spoken?.history.map((step) => step.state)).toEqual(['queued', 'sent', 'spoken']);
    expect(await store.move('p1', { state: 'interrupted', reason: 'abort' })).toBeUndefined();
    expect(await store.get('p1')).toEqual(spoken);
    expect(await store.move('unknown', { state: 'sent' })).toBeUndefined();
    expect(await store.get('unknown')).toBeUndefined();
  });

  it("learns the device's owner from the move that found it (a push held for an offline device)", async () => {
    const store = await open(bounds);
    await store.create([newRecord({ id: 'o1', device: 'attic', kind: 'say', by: 'agent' })]);
    expect((await store.move('o1', { state: 'held', expiresAt: Date.now() + 60_000, owner: 'olga' }))?.owner).toBe('olga');
    expect((await store.get('o1'))?.owner).toBe('olga');
  });

  it('leaves a receipt that exists as it is when it is created again (a reminder tried again)', async () => {
    const store = await open(bounds);
    await store.create([record('p2')]);
    await store.move('p2', { state: 'sent' });
    await store.create([record('p2')]);
    expect((await store.get('p2'))?.state).toBe('sent');
  });

  it('lets one of two racing moves win', async () => {
    const store = await open(bounds);
    await store.create([record('p3')]);
    // Two instances both sure they just sent it, or one held and one refused it: one wins.
    const sent = await Promise.all([store.move('p3', { state: 'sent' }), store.move('p3', { state: 'sent' })]);
    expect(sent.filter(Boolean)).toHaveLength(1);
    expect((await store.get('p3'))?.history).toHaveLength(2);
  });

  it('moves held receipts whose hold ran out to expired, once, and not those sent meanwhile', async () => {
    const store = await open(bounds);
    await store.create([record('h1'), record('h2'), record('h3')]);
    const now = Date.now();
    await store.move('h1', { state: 'held', expiresAt: now - 10 });
    await store.move('h2', { state: 'held', expiresAt: now - 10 });
    await store.move('h2', { state: 'sent' });
    await store.move('h3', { state: 'held', expiresAt: now + 60_000 });
    const expired = await store.expireHeld(now);
    expect(expired.map((one) => [one.id, one.state, one.history.at(-1)?.reason])).toEqual([['h1', 'expired', 'hold_ran_out']]);
    expect(await store.expireHeld(now)).toEqual([]);
    expect((await store.get('h2'))?.state).toBe('sent');
    expect((await store.get('h3'))?.state).toBe('held');
  });

  it('never expires a held push its device took before its hold ran out, expires one given back, and refuses to give out one already expired', async () => {
    const store = await open(bounds);
    await store.create([record('t1'), record('t2'), record('t3')]);
    const now = Date.now();
    for (const id of ['t1', 't2', 't3']) await store.move(id, { state: 'held', expiresAt: now - 10 });
    expect(await store.takeHeld('t1')).toBe(true);
    expect(await store.takeHeld('t2')).toBe(true);
    await store.returnHeld('t2', now - 5);
    expect((await store.expireHeld(now)).map((one) => one.id).sort()).toEqual(['t2', 't3']);
    // Taken while its hold ran out: it goes on as its delivery says.
    expect((await store.get('t1'))?.state).toBe('held');
    expect((await store.move('t1', { state: 'sent' }))?.state).toBe('sent');
    expect(await store.takeHeld('t3')).toBe(false);
    await store.returnHeld('t3', now + 60_000);
    expect((await store.get('t3'))?.state).toBe('expired');
    expect(await store.takeHeld('not-kept')).toBe(true);
  });

  it('keeps at most its count, dropping the oldest', async () => {
    const store = await open({ ttlMs: 60_000, max: 3 });
    for (const id of ['a', 'b', 'c', 'd', 'e']) await store.create([record(id)]);
    expect(await store.get('a')).toBeUndefined();
    expect(await store.get('b')).toBeUndefined();
    for (const id of ['c', 'd', 'e']) expect(await store.get(id)).toBeDefined();
  });
}

describe('MemoryPushReceipts', () => {
  behavesAsAReceiptStore(async (bounds) => new MemoryPushReceipts(bounds));

  it('forgets a receipt after its time', async () => {
    let now = 1000;
    const store = new MemoryPushReceipts({ ttlMs: 500, max: 10 }, () => now);
    await store.create([record('old')]);
    now = 1499;
    expect(await store.get('old')).toBeDefined();
    now = 1500;
    expect(await store.get('old')).toBeUndefined();
    expect(await store.move('old', { state: 'sent' })).toBeUndefined();
  });
});

describe('RedisPushReceipts', () => {
  let redis: Redis;
  const prefix = uniquePrefix();

  beforeAll(async () => {
    redis = await inspector();
  });

  afterAll(async () => {
    await removeKeys(redis, prefix);
    redis.disconnect();
  });

  let run = 0;
  behavesAsAReceiptStore(async (bounds) => new RedisPushReceipts(redis, `${prefix}${run++}:`, bounds));

  it('gives each receipt the TTL of the setting, and the move keeps it', async () => {
    const store = new RedisPushReceipts(redis, `${prefix}ttl:`, { ttlMs: 5000, max: 10 });
    await store.create([record('t1')]);
    await store.move('t1', { state: 'sent' });
    const ttl = await redis.pttl(`${prefix}ttl:fleet:push:t1`);
    expect(ttl).toBeGreaterThan(4000);
    expect(ttl).toBeLessThanOrEqual(5000);
  });

  it('is shared: what one instance moves, another reads', async () => {
    const one = new RedisPushReceipts(redis, `${prefix}shared:`, { ttlMs: 5000, max: 10 });
    const other = new RedisPushReceipts(redis, `${prefix}shared:`, { ttlMs: 5000, max: 10 });
    await one.create([record('s1')]);
    await other.move('s1', { state: 'sent' });
    expect((await one.get('s1'))?.state).toBe('sent');
  });
});
