import type Redis from 'ioredis';
import { advance, isFinal, PUSH_STATES, type PushMove, type PushRecord, statesBefore } from './push-state';

/** How long receipts are kept, and how many at most (the oldest go first). */
export interface ReceiptBounds {
  ttlMs: number;
  max: number;
}

/** Held receipts one sweep moves to `expired` at most. */
export const EXPIRE_BATCH = 200;

/**
 * Where push receipts live, shared by every instance: in memory on one instance, in Redis across
 * replicas (the instance holding a device moves the receipts of its pushes; any instance reads
 * them). Each move is checked against the state machine ({@link advance}) atomically, so a late
 * or repeated report never rewinds a receipt, and when two instances race only one move wins.
 */
export interface PushReceiptStore {
  /** Keeps new `queued` receipts; one whose id exists is left as it is (a reminder tried again). */
  create(records: PushRecord[]): Promise<void>;
  /** Moves the receipt; the receipt as it now is, or `undefined` when it is unknown or the move is not allowed from where it is. */
  move(id: string, move: PushMove): Promise<PushRecord | undefined>;
  /** Several moves in one go (each as {@link move}, in order), what each gave. */
  moveMany(moves: { id: string; move: PushMove }[]): Promise<(PushRecord | undefined)[]>;
  get(id: string): Promise<PushRecord | undefined>;
  /** The receipts of `ids` (those kept), in one look. */
  getMany(ids: string[]): Promise<PushRecord[]>;
  /** Moves the held receipts whose hold ran out by `now` to `expired` (at most {@link EXPIRE_BATCH}); those it moved, none of them taken. */
  expireHeld(now: number): Promise<PushRecord[]>;
  /**
   * The held push `id` is being delivered: its hold no longer runs out ({@link expireHeld} leaves
   * it), so a push its device took just before the end of its hold is not called expired while
   * it is said. False when the receipt is already final (its hold ran out first): the push is not
   * to be said. True for a receipt not kept (the count bound dropped it).
   */
  takeHeld(id: string): Promise<boolean>;
  /** The push {@link takeHeld} took went back unsaid (its device left first): its hold runs out at `expiresAt` again, if it is still held. */
  returnHeld(id: string, expiresAt: number): Promise<void>;
}

export class MemoryPushReceipts implements PushReceiptStore {
  /** In creation order, which a Map keeps: the oldest is the first. */
  private readonly records = new Map<string, { record: PushRecord; until: number }>();
  /** Held receipts, by id, with when their hold runs out. */
  private readonly held = new Map<string, number>();

  constructor(
    private readonly bounds: ReceiptBounds,
    private readonly now: () => number = Date.now,
  ) {}

  async create(records: PushRecord[]): Promise<void> {
    const until = this.now() + this.bounds.ttlMs;
    for (const record of records) if (!this.live(record.id)) this.records.set(record.id, { record, until });
    this.trim();
  }

  async move(id: string, move: PushMove): Promise<PushRecord | undefined> {
    const kept = this.live(id);
    const moved = kept && advance(kept.record, move, this.now());
    if (!kept || !moved) return undefined;
    kept.record = moved;
    if (moved.state === 'held' && moved.expiresAt !== undefined) this.held.set(id, moved.expiresAt);
    else this.held.delete(id);
    return moved;
  }

  async moveMany(moves: { id: string; move: PushMove }[]): Promise<(PushRecord | undefined)[]> {
    const moved: (PushRecord | undefined)[] = [];
    for (const { id, move } of moves) moved.push(await this.move(id, move));
    return moved;
  }

  async get(id: string): Promise<PushRecord | undefined> {
    return this.live(id)?.record;
  }

  async getMany(ids: string[]): Promise<PushRecord[]> {
    return ids.flatMap((id) => this.live(id)?.record ?? []);
  }

  async takeHeld(id: string): Promise<boolean> {
    const kept = this.live(id);
    if (kept && isFinal(kept.record.state)) return false;
    this.held.delete(id);
    return true;
  }

  async returnHeld(id: string, expiresAt: number): Promise<void> {
    if (this.live(id)?.record.state === 'held') this.held.set(id, expiresAt);
  }

  async expireHeld(now: number): Promise<PushRecord[]> {
    const expired: PushRecord[] = [];
    for (const [id, expiresAt] of this.held) {
      if (expired.length >= EXPIRE_BATCH) break;
      if (expiresAt > now) continue;
      const moved = await this.move(id, { state: 'expired', reason: 'hold_ran_out' });
      this.held.delete(id);
      if (moved) expired.push(moved);
    }
    return expired;
  }

  private live(id: string): { record: PushRecord; until: number } | undefined {
    const kept = this.records.get(id);
    if (kept && kept.until <= this.now()) {
      this.records.delete(id);
      this.held.delete(id);
      return undefined;
    }
    return kept;
  }

  /** Drops what ran out, then the oldest past the count bound. */
  private trim(): void {
    const now = this.now();
    for (const [id, { until }] of this.records) {
      if (until > now && this.records.size <= this.bounds.max) break;
      this.records.delete(id);
      this.held.delete(id);
    }
  }
}

/**
 * KEYS: the index (ids by creation time). ARGV: now, ttl ms, max, the receipts' key prefix, then
 * (id, record) pairs. A receipt is a string key with its TTL; the index bounds the count, its
 * oldest dropped first.
 */
const CREATE = `
local now, ttl, max, prefix = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
for i = 5, #ARGV, 2 do
  if redis.call('SET', prefix .. ARGV[i], ARGV[i + 1], 'PX', ttl, 'NX') then redis.call('ZADD', KEYS[1], now, ARGV[i]) end
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - ttl)
local over = redis.call('ZCARD', KEYS[1]) - max
if over > 0 then
  local popped = redis.call('ZPOPMIN', KEYS[1], over)
  for i = 1, #popped, 2 do redis.call('DEL', prefix .. popped[i]) end
end
redis.call('PEXPIRE', KEYS[1], ttl)
return 1`;

/**
 * KEYS: the held index. ARGV: for each move, six: the receipt's key, the states it may move from
 * (comma-separated), the step (JSON), the new state, expires at (or ''), the device's owner (or
 * ''). For each, the record as it now is, or '' when it did not move (unknown, or not from where it is).
 */
const MOVE = `
local results = {}
for i = 1, #ARGV, 6 do
  local key, from, step, state, expiresAt, owner = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4], ARGV[i + 5]
  local current = redis.call('GET', key)
  local result = ''
  if current then
    local record = cjson.decode(current)
    if string.find(',' .. from .. ',', ',' .. record.state .. ',', 1, true) then
      record.state = state
      table.insert(record.history, cjson.decode(step))
      if expiresAt ~= '' then record.expiresAt = tonumber(expiresAt) end
      if owner ~= '' then record.owner = owner end
      result = cjson.encode(record)
      redis.call('SET', key, result, 'KEEPTTL')
      if state == 'held' and expiresAt ~= '' then redis.call('ZADD', KEYS[1], expiresAt, record.id) else redis.call('ZREM', KEYS[1], record.id) end
    end
  end
  results[#results + 1] = result
end
return results`;

/**
 * KEYS: the held index. ARGV: the receipt's key, its id, now, the step (JSON). Moves a held
 * receipt to `expired` only while it is in the index with its hold run out by `now`, so a push
 * taken meanwhile ({@link TAKE_HELD}) stays as its delivery leaves it; takes it out of the index
 * whatever it is. The record as it now is, or ''.
 */
const EXPIRE_HELD = `
local key, id, now, step = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4]
local due = redis.call('ZSCORE', KEYS[1], id)
if not due or tonumber(due) > now then return '' end
redis.call('ZREM', KEYS[1], id)
local current = redis.call('GET', key)
if not current then return '' end
local record = cjson.decode(current)
if record.state ~= 'held' then return '' end
record.state = 'expired'
table.insert(record.history, cjson.decode(step))
local result = cjson.encode(record)
redis.call('SET', key, result, 'KEEPTTL')
return result`;

/** KEYS: the held index. ARGV: the receipt's key, its id, its final states (comma-separated). 0 when the receipt is final, else 1, out of the index. */
const TAKE_HELD = `
local current = redis.call('GET', ARGV[1])
if current and string.find(',' .. ARGV[3] .. ',', ',' .. cjson.decode(current).state .. ',', 1, true) then return 0 end
redis.call('ZREM', KEYS[1], ARGV[2])
return 1`;

/** KEYS: the held index. ARGV: the receipt's key, its id, when its hold runs out. Back in the index if it is still held. */
const RETURN_HELD = `
local current = redis.call('GET', ARGV[1])
if current and cjson.decode(current).state == 'held' then redis.call('ZADD', KEYS[1], ARGV[3], ARGV[2]) end
return 1`;

/** The store's scripts, each on one key (the index or the held index), sent by SHA once Redis has them. */
const SCRIPTS = {
  vtgReceiptCreate: CREATE,
  vtgReceiptMove: MOVE,
  vtgReceiptExpireHeld: EXPIRE_HELD,
  vtgReceiptTakeHeld: TAKE_HELD,
  vtgReceiptReturnHeld: RETURN_HELD,
};

type ScriptedRedis = Redis & Record<keyof typeof SCRIPTS, (key: string, ...args: (string | number)[]) => Promise<unknown>>;

export class RedisPushReceipts implements PushReceiptStore {
  private readonly redis: ScriptedRedis;

  constructor(
    redis: Redis,
    private readonly prefix: string,
    private readonly bounds: ReceiptBounds,
  ) {
    // EVALSHA, as the other stores: a push writes its receipt three times, and need not send the scripts' text each time.
    for (const [name, lua] of Object.entries(SCRIPTS)) redis.defineCommand(name, { numberOfKeys: 1, lua });
    this.redis = redis as ScriptedRedis;
  }

  async create(records: PushRecord[]): Promise<void> {
    if (records.length === 0) return;
    const pairs = records.flatMap((record) => [record.id, JSON.stringify(record)]);
    await this.redis.vtgReceiptCreate(this.indexKey(), Date.now(), this.bounds.ttlMs, this.bounds.max, this.key(''), ...pairs);
  }

  async move(id: string, move: PushMove): Promise<PushRecord | undefined> {
    const [moved] = await this.moveMany([{ id, move }]);
    return moved;
  }

  async moveMany(moves: { id: string; move: PushMove }[]): Promise<(PushRecord | undefined)[]> {
    if (moves.length === 0) return [];
    const at = new Date().toISOString();
    const args = moves.flatMap(({ id, move }) => [
      this.key(id),
      statesBefore(move.state).join(','),
      JSON.stringify({ state: move.state, at, ...(move.reason !== undefined && { reason: move.reason }) }),
      move.state,
      move.expiresAt ?? '',
      move.owner ?? '',
    ]);
    const moved = (await this.redis.vtgReceiptMove(this.heldKey(), ...args)) as string[];
    return moved.map((serialized) => (serialized ? fromJson(serialized) : undefined));
  }

  async get(id: string): Promise<PushRecord | undefined> {
    const kept = await this.redis.get(this.key(id));
    return kept ? fromJson(kept) : undefined;
  }

  async getMany(ids: string[]): Promise<PushRecord[]> {
    if (ids.length === 0) return [];
    const kept = await this.redis.mget(ids.map((id) => this.key(id)));
    return kept.flatMap((serialized) => (serialized ? [fromJson(serialized)] : []));
  }

  async expireHeld(now: number): Promise<PushRecord[]> {
    const due = await this.redis.zrangebyscore(this.heldKey(), '-inf', now, 'LIMIT', 0, EXPIRE_BATCH);
    const step = JSON.stringify({ state: 'expired', at: new Date(now).toISOString(), reason: 'hold_ran_out' });
    const expired: PushRecord[] = [];
    for (const id of due) {
      const moved = (await this.redis.vtgReceiptExpireHeld(this.heldKey(), this.key(id), id, now, step)) as string;
      if (moved) expired.push(fromJson(moved));
    }
    return expired;
  }

  async takeHeld(id: string): Promise<boolean> {
    return (await this.redis.vtgReceiptTakeHeld(this.heldKey(), this.key(id), id, FINAL_STATES)) === 1;
  }

  async returnHeld(id: string, expiresAt: number): Promise<void> {
    await this.redis.vtgReceiptReturnHeld(this.heldKey(), this.key(id), id, expiresAt);
  }

  private key(id: string): string {
    return `${this.prefix}fleet:push:${id}`;
  }

  private indexKey(): string {
    return `${this.prefix}fleet:pushes`;
  }

  private heldKey(): string {
    return `${this.prefix}fleet:pushes-held`;
  }
}

const FINAL_STATES = PUSH_STATES.filter(isFinal).join(',');

function fromJson(serialized: string): PushRecord {
  const record = JSON.parse(serialized) as PushRecord;
  // cjson encodes an empty table as an object: a history is never empty, but be exact.
  if (!Array.isArray(record.history)) record.history = [];
  return record;
}
