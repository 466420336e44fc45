import { Logger } from '@nestjs/common';
import { MemoryPushReceipts, PushReceiptStore } from './push-receipt-store';
import { FOLLOW_MAX, PushReceipts } from './push-receipts';
import type { PushRecord } from './push-state';
import { PushWebhooks } from './push-webhooks';

const push = (id: string, more: Partial<PushRecord> = {}) => ({ id, device: 'kitchen', kind: 'say' as const, by: 'alice', owner: 'olga', ...more });

describe('PushReceipts', () => {
  let store: PushReceiptStore;
  let receipts: PushReceipts;
  let posted: unknown[];

  beforeAll(() => Logger.overrideLogger(false));
  beforeEach(() => {
    store = new MemoryPushReceipts({ ttlMs: 60_000, max: 1000 });
    posted = [];
    const webhooks = { enqueue: (body: unknown) => posted.push(body) > 0, close: () => undefined } as unknown as PushWebhooks;
    receipts = new PushReceipts(store, webhooks);
  });
  afterEach(() => receipts.onApplicationShutdown());

  it('shows a receipt to who pushed it and to the device owner only', async () => {
    await receipts.open([push('p1')]);
    expect(await receipts.view('p1', { principal: 'alice' })).toMatchObject({ id: 'p1', state: 'queued', turn_id: 'p1' });
    expect(await receipts.view('p1', { principal: 'olga' })).toBeDefined();
    expect(await receipts.view('p1', { principal: 'mallory' })).toBeUndefined();
    expect(await receipts.view('p1', {})).toBeUndefined();
    await receipts.open([push('anonymous', { by: '', owner: undefined })]);
    expect(await receipts.view('anonymous', {})).toBeDefined();
    expect(await receipts.view('anonymous', { principal: 'alice' })).toBeUndefined();
  });

  it('writes the moves of one receipt in the order they were made, even when the store answers out of order', async () => {
    await receipts.open([push('p2')]);
    const slow = store.move.bind(store);
    let first = true;
    store.move = async (id, move) => {
      if (first) {
        first = false;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      return slow(id, move);
    };
    const [sent, spoken] = await Promise.all([receipts.move('p2', { state: 'sent' }), receipts.move('p2', { state: 'spoken' })]);
    expect(sent?.state).toBe('sent');
    expect(spoken?.history.map((step) => step.state)).toEqual(['queued', 'sent', 'spoken']);
  });

  it('writes the moves made in one turn of the event loop in one store call, and moves made meanwhile in the next', async () => {
    const ids = Array.from({ length: 600 }, (_, index) => `m${index}`);
    await receipts.open(ids.map((id) => push(id)));
    const calls: number[] = [];
    const moveMany = store.moveMany.bind(store);
    store.moveMany = async (moves) => {
      calls.push(moves.length);
      return moveMany(moves);
    };
    const sent = ids.map((id) => receipts.move(id, { state: 'sent' }));
    const spoken = receipts.move('m0', { state: 'spoken' }); // waits for m0's sent
    expect((await Promise.all(sent)).every((record) => record?.state === 'sent')).toBe(true);
    expect((await spoken)?.state).toBe('spoken');
    // 600 at once: a batch of 512, then the rest; m0's second move once its first was written.
    expect(calls[0]).toBe(512);
    expect(calls.length).toBeLessThanOrEqual(3);
    expect(calls.reduce((sum, count) => sum + count, 0)).toBe(601);
  });

  it('tells the webhook each change, and never fails a push when the store does', async () => {
    await receipts.open([push('p3')]);
    await receipts.move('p3', { state: 'refused', reason: 'DEVICE_BUSY' });
    expect(posted).toEqual([
      expect.objectContaining({ event: 'push.state', id: 'p3', state: 'queued' }),
      expect.objectContaining({
        event: 'push.state',
        id: 'p3',
        state: 'refused',
        reason: 'DEVICE_BUSY',
        receipt: expect.objectContaining({ state: 'refused' }),
      }),
    ]);
    store.move = () => Promise.reject(new Error('Redis is away'));
    store.create = () => Promise.reject(new Error('Redis is away'));
    await expect(receipts.open([push('p4')])).resolves.toBeUndefined();
    await expect(receipts.move('p3', { state: 'sent' })).resolves.toBeUndefined();
  });

  it('follows receipts until each is final, hearing each state once', async () => {
    await receipts.open([push('f1'), push('f2')]);
    const heard: string[] = [];
    const following = receipts.follow(['f1', 'f2', 'unknown'], new AbortController().signal, (record) => heard.push(`${record.id}:${record.state}`));
    await new Promise((resolve) => setTimeout(resolve, 20));
    await receipts.move('f1', { state: 'sent' });
    await receipts.move('f1', { state: 'spoken' });
    await receipts.move('f2', { state: 'refused', reason: 'DEVICE_OFFLINE' });
    const last = await following;
    expect(heard).toEqual(['f1:queued', 'f2:queued', 'f1:sent', 'f1:spoken', 'f2:refused']);
    expect([...last.values()].map((record) => record.state)).toEqual(['spoken', 'refused']);
  });

  it('stops following when told, and follows at most its bound', async () => {
    const ids = Array.from({ length: FOLLOW_MAX + 5 }, (_, index) => `b${index}`);
    await receipts.open(ids.map((id) => push(id)));
    const stop = new AbortController();
    const heard = new Set<string>();
    const following = receipts.follow(ids, stop.signal, (record) => heard.add(record.id));
    await new Promise((resolve) => setTimeout(resolve, 50));
    stop.abort();
    await following;
    expect(heard.size).toBe(FOLLOW_MAX);
  });
});
