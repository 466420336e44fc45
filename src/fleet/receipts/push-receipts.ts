import { Logger, OnApplicationShutdown } from '@nestjs/common';
import { Subject } from 'rxjs';
import { COMMAND_TIMEOUT_MS } from '../../core/redis/redis-connection';
import type { GatewayState } from '../../core/state/gateway-state';
import type { GatewayConfig } from '../../config/gateway-config';
import type { FleetCaller } from '../device-push';
import { MemoryPushReceipts, type PushReceiptStore, RedisPushReceipts } from './push-receipt-store';
import { isFinal, newRecord, type PushMove, type PushRecord, type PushState } from './push-state';
import { PushWebhooks } from './push-webhooks';

/** How often each instance moves held receipts whose hold ran out to `expired`. */
const EXPIRE_EVERY_MS = 1000;
/** How often a follower looks at receipts that may move on another instance. */
const FOLLOW_POLL_MS = 250;
/** Receipts one follower may follow: each look reads them all. */
export const FOLLOW_MAX = 100;
/** Moves written to the store in one go at most; those made in one turn of the event loop go together. */
const MOVE_BATCH_MAX = 512;

/** A receipt as callers read it (`GET /pushes/<id>`, webhooks, `device_say`'s progress). */
export interface ReceiptView {
  id: string;
  device: string;
  kind: PushRecord['kind'];
  state: PushState;
  history: PushRecord['history'];
  turn_id: string;
  reminder_id?: string;
  /** ISO 8601, while held. */
  expires_at?: string;
}

export const receiptViewOf = (record: PushRecord): ReceiptView => ({
  id: record.id,
  device: record.device,
  kind: record.kind,
  state: record.state,
  history: record.history,
  turn_id: record.id,
  ...(record.reminderId !== undefined && { reminder_id: record.reminderId }),
  ...(record.state === 'held' && record.expiresAt !== undefined && { expires_at: new Date(record.expiresAt).toISOString() }),
});

/**
 * The delivery receipts of pushes: each push gets one when the gateway takes it, and the
 * instance where something happens to it (the one holding the device, or the one that held or
 * refused it) moves it through the state machine of `push-state.ts`. Moves of one receipt made
 * on one instance are written in the order they were made; every move is checked atomically in
 * the store, so no report rewinds a receipt. A move never fails a push: a store that cannot be
 * written is logged. Each move is told to the webhook, when one is set, and to local followers.
 */
export class PushReceipts implements OnApplicationShutdown {
  private readonly logger = new Logger('Fleet');
  /** The last write of each receipt moving on this instance, so the next waits for it. */
  private readonly writing = new Map<string, Promise<unknown>>();
  private readonly moved = new Subject<PushRecord>();
  private readonly expiry: NodeJS.Timeout;
  private expiring = false;
  /** Moves made in this turn of the event loop, written together at its end. */
  private batch?: { moves: { id: string; move: PushMove }[]; written: Promise<(PushRecord | undefined)[] | undefined> };

  constructor(
    private readonly store: PushReceiptStore,
    readonly webhooks: PushWebhooks | undefined,
    private readonly close: () => Promise<void> = async () => undefined,
  ) {
    this.expiry = setInterval(() => void this.expireHeld(), EXPIRE_EVERY_MS).unref();
  }

  /**
   * New `queued` receipts; resolves once they are stored (so another instance may move them).
   * This instance's moves of them wait for it. Never rejects.
   */
  open(records: Omit<PushRecord, 'state' | 'history' | 'expiresAt'>[]): Promise<void> {
    if (records.length === 0) return Promise.resolve();
    const created = records.map((record) => newRecord(record));
    const write = this.store.create(created).then(
      () => created.forEach((record) => this.changed(record)),
      (error: Error) => this.logger.warn(`Receipts of ${records.length} pushes not stored: ${error.message}`),
    );
    for (const { id } of created) this.writing.set(id, write);
    void write.finally(() => created.forEach(({ id }) => this.writing.get(id) === write && this.writing.delete(id)));
    return write;
  }

  /** Moves the receipt `id`, after this instance's earlier moves of it; resolves with the receipt moved, or `undefined`. Never rejects. */
  move(id: string, move: PushMove): Promise<PushRecord | undefined> {
    const before = this.writing.get(id) ?? Promise.resolve();
    const write = before.then(async () => {
      const record = await this.batched(id, move);
      if (record) this.changed(record);
      return record;
    });
    this.writing.set(id, write);
    void write.finally(() => {
      if (this.writing.get(id) === write) this.writing.delete(id);
    });
    return write;
  }

  /**
   * A held push is being delivered: its hold no longer runs out (see `PushReceiptStore.takeHeld`),
   * after this instance's moves of it. False when its receipt is already final: the push is not
   * to be said. A store that cannot be read does not stop the delivery.
   */
  async takeHeld(id: string): Promise<boolean> {
    await this.writing.get(id);
    return this.store.takeHeld(id).catch((error: Error) => {
      this.logger.warn(`Receipt of held push ${id} not marked as taken: ${error.message}`);
      return true;
    });
  }

  /** A held push taken by {@link takeHeld} went back unsaid: its hold runs out at `expiresAt` again. Never rejects. */
  async returnHeld(id: string, expiresAt: number): Promise<void> {
    await this.store.returnHeld(id, expiresAt).catch((error: Error) => this.logger.warn(`Receipt of held push ${id} not held again: ${error.message}`));
  }

  /** The receipt `id` if `caller` pushed it or owns its device; `undefined` otherwise, as for an unknown id. */
  async view(id: string, caller: FleetCaller): Promise<ReceiptView | undefined> {
    const record = await this.store.get(id);
    if (!record) return undefined;
    const principal = caller.principal ?? '';
    return record.by === principal || (record.owner !== undefined && record.owner === principal) ? receiptViewOf(record) : undefined;
  }

  /**
   * Follows receipts (at most {@link FOLLOW_MAX}, the first ones) until each is final or
   * `signal` aborts: `onChange` hears each state it reaches (moves made here at once, moves made
   * on other instances within {@link FOLLOW_POLL_MS}, one read of them all each time). Resolves
   * with the receipts as they last were.
   */
  async follow(ids: string[], signal: AbortSignal, onChange: (record: PushRecord) => void): Promise<Map<string, PushRecord>> {
    const last = new Map<string, PushRecord>();
    const pending = new Set(ids.slice(0, FOLLOW_MAX));
    let wake: (() => void) | undefined;
    const hear = (record: PushRecord) => {
      const known = last.get(record.id);
      if (!pending.has(record.id) || (known && known.history.length >= record.history.length)) return;
      last.set(record.id, record);
      onChange(record);
      if (isFinal(record.state)) pending.delete(record.id);
      if (pending.size === 0) wake?.();
    };
    const local = this.moved.subscribe(hear);
    const stop = () => wake?.();
    signal.addEventListener('abort', stop, { once: true });
    try {
      while (pending.size > 0 && !signal.aborted) {
        const records = await this.store.getMany([...pending]).catch(() => undefined);
        // A receipt no longer kept (or never stored) is not waited for.
        if (records) for (const id of pending) if (!records.some((record) => record.id === id) && !last.has(id)) pending.delete(id);
        for (const record of records ?? []) hear(record);
        if (pending.size === 0 || signal.aborted) break;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, FOLLOW_POLL_MS);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        wake = undefined;
      }
    } finally {
      local.unsubscribe();
      signal.removeEventListener('abort', stop);
    }
    return last;
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.expiry);
    this.webhooks?.close();
    this.moved.complete();
    await Promise.allSettled([...this.writing.values()]);
    await this.close();
  }

  /**
   * Writes `move` with the others made in this turn of the event loop, in one store call (a fan-out
   * moves thousands at once): what it gave, or `undefined` when the store failed (logged once per batch).
   */
  private batched(id: string, move: PushMove): Promise<PushRecord | undefined> {
    let batch = this.batch;
    if (!batch || batch.moves.length >= MOVE_BATCH_MAX) {
      const moves: { id: string; move: PushMove }[] = [];
      const written = new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
        // From here on, moves go to the next batch.
        if (this.batch === batch) this.batch = undefined;
        return this.store.moveMany(moves).catch((error: Error) => {
          this.logger.warn(`Receipts of ${moves.length} pushes not moved: ${error.message}`);
          return undefined;
        });
      });
      batch = this.batch = { moves, written };
    }
    const index = batch.moves.push({ id, move }) - 1;
    return batch.written.then((moved) => moved?.[index]);
  }

  private changed(record: PushRecord): void {
    this.moved.next(record);
    const step = record.history[record.history.length - 1];
    this.webhooks?.enqueue({ event: 'push.state', id: record.id, state: record.state, at: step.at, reason: step.reason, receipt: receiptViewOf(record) });
  }

  /** Held receipts whose hold ran out become `expired` (every instance sweeps; the store lets one win each). */
  private async expireHeld(): Promise<void> {
    if (this.expiring) return;
    this.expiring = true;
    try {
      for (const record of await this.store.expireHeld(Date.now())) this.changed(record);
    } catch (error) {
      this.logger.warn(`Held push receipts not expired: ${(error as Error).message}`);
    } finally {
      this.expiring = false;
    }
  }
}

/** Receipts in Redis when instances share it (so any replica answers for any push), in memory otherwise. */
export async function openPushReceipts(state: GatewayState, { fleet }: GatewayConfig): Promise<PushReceipts> {
  const { receipts } = fleet;
  const webhooks = receipts.webhook ? new PushWebhooks(receipts.webhook) : undefined;
  return state.choose<Promise<PushReceipts>>({
    memory: async () => new PushReceipts(new MemoryPushReceipts(receipts), webhooks),
    redis: async (shared) => {
      const [redis] = await shared.connect(1);
      // A frozen Redis fails a move in time rather than holding up the push it follows.
      redis.options.commandTimeout = COMMAND_TIMEOUT_MS;
      return new PushReceipts(new RedisPushReceipts(redis, shared.keyPrefix, receipts), webhooks, async () => {
        await redis.quit().catch(() => redis.disconnect());
      });
    },
  });
}
