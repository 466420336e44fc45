import type Redis from 'ioredis';
import { COMMAND_TIMEOUT_MS } from '../../core/redis/redis-connection';
import type { SharedRedis } from '../../core/state/shared-redis';
import type { FirmwareEntry, Rollout } from './rollout-model';

/** What a write found: `exists` (create: the id is taken), `full` (create: the table holds its most), `gone` (no such record), `stale` (someone changed it first). */
export type WriteOutcome = 'ok' | 'exists' | 'full' | 'gone' | 'stale';

/** A record that can be written only over the revision it was read at. */
export interface Revised {
  id: string;
  revision: number;
}

/**
 * One kind of record, by id. Writes are conditional, so two operators (on two instances) never
 * undo each other unawares: {@link replace} writes revision `n + 1` only over revision `n`.
 */
export interface RecordTable<T extends Revised> {
  all(): Promise<T[]>;
  get(id: string): Promise<T | undefined>;
  /** Adds `record` unless its id is taken or the table already holds `max` records. */
  create(record: T, max: number): Promise<WriteOutcome>;
  /** Writes `record` over the stored one of revision `record.revision - 1`. */
  replace(record: T): Promise<WriteOutcome>;
  /** Removes the record if it is still at `revision`. */
  remove(id: string, revision: number): Promise<WriteOutcome>;
}

/** Firmware entries and rollouts, shared by every instance when they share Redis. */
export interface RolloutStore {
  readonly firmware: RecordTable<FirmwareEntry>;
  readonly rollouts: RecordTable<Rollout>;
  close(): Promise<void>;
}

/** DI token of the {@link RolloutStore}. */
export const ROLLOUT_STORE = Symbol('ROLLOUT_STORE');

/** This instance's memory, for a gateway without Redis. Records are copied in and out, as Redis's JSON would. */
export class MemoryRecordTable<T extends Revised> implements RecordTable<T> {
  private readonly records = new Map<string, string>();

  async all(): Promise<T[]> {
    return [...this.records.values()].map((json) => JSON.parse(json) as T);
  }

  async get(id: string): Promise<T | undefined> {
    const json = this.records.get(id);
    return json === undefined ? undefined : (JSON.parse(json) as T);
  }

  async create(record: T, max: number): Promise<WriteOutcome> {
    if (this.records.has(record.id)) return 'exists';
    if (this.records.size >= max) return 'full';
    this.records.set(record.id, JSON.stringify(record));
    return 'ok';
  }

  async replace(record: T): Promise<WriteOutcome> {
    const outcome = this.check(record.id, record.revision - 1);
    if (outcome === 'ok') this.records.set(record.id, JSON.stringify(record));
    return outcome;
  }

  async remove(id: string, revision: number): Promise<WriteOutcome> {
    const outcome = this.check(id, revision);
    if (outcome === 'ok') this.records.delete(id);
    return outcome;
  }

  private check(id: string, revision: number): WriteOutcome {
    const json = this.records.get(id);
    if (json === undefined) return 'gone';
    return (JSON.parse(json) as Revised).revision === revision ? 'ok' : 'stale';
  }
}

export class MemoryRolloutStore implements RolloutStore {
  readonly firmware = new MemoryRecordTable<FirmwareEntry>();
  readonly rollouts = new MemoryRecordTable<Rollout>();
  async close(): Promise<void> {}
}

/** KEYS[1] the hash; ARGV id, JSON, max. */
const CREATE = `
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then return 'exists' end
if redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[3]) then return 'full' end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 'ok'`;

/** KEYS[1] the hash; ARGV id, the revision it must be at, then the JSON to write (none: remove it). */
const WRITE_AT_REVISION = `
local stored = redis.call('HGET', KEYS[1], ARGV[1])
if not stored then return 'gone' end
if cjson.decode(stored).revision ~= tonumber(ARGV[2]) then return 'stale' end
if ARGV[3] then redis.call('HSET', KEYS[1], ARGV[1], ARGV[3]) else redis.call('HDEL', KEYS[1], ARGV[1]) end
return 'ok'`;

type ScriptedRedis = Redis & {
  rolloutCreate(key: string, id: string, json: string, max: number): Promise<WriteOutcome>;
  rolloutWrite(key: string, id: string, revision: number, ...json: string[]): Promise<WriteOutcome>;
};

/** One Redis hash per kind of record, every write a script that checks and writes at once. */
export class RedisRecordTable<T extends Revised> implements RecordTable<T> {
  constructor(
    private readonly redis: ScriptedRedis,
    private readonly key: string,
  ) {}

  async all(): Promise<T[]> {
    return Object.values(await this.redis.hgetall(this.key)).map((json) => JSON.parse(json) as T);
  }

  async get(id: string): Promise<T | undefined> {
    const json = await this.redis.hget(this.key, id);
    return json === null ? undefined : (JSON.parse(json) as T);
  }

  create(record: T, max: number): Promise<WriteOutcome> {
    return this.redis.rolloutCreate(this.key, record.id, JSON.stringify(record), max);
  }

  replace(record: T): Promise<WriteOutcome> {
    return this.redis.rolloutWrite(this.key, record.id, record.revision - 1, JSON.stringify(record));
  }

  remove(id: string, revision: number): Promise<WriteOutcome> {
    return this.redis.rolloutWrite(this.key, id, revision);
  }
}

export class RedisRolloutStore implements RolloutStore {
  private constructor(
    private readonly redis: ScriptedRedis,
    readonly firmware: RecordTable<FirmwareEntry>,
    readonly rollouts: RecordTable<Rollout>,
  ) {}

  /** Under the shared key prefix: `fleet:firmware` and `fleet:rollouts`. */
  static async connect(shared: SharedRedis): Promise<RedisRolloutStore> {
    const [client] = await shared.connect(1, (redis) => {
      redis.defineCommand('rolloutCreate', { numberOfKeys: 1, lua: CREATE });
      redis.defineCommand('rolloutWrite', { numberOfKeys: 1, lua: WRITE_AT_REVISION });
    });
    // A frozen Redis fails a configuration answer's lookup in time rather than holding the device.
    client.options.commandTimeout = COMMAND_TIMEOUT_MS;
    const redis = client as ScriptedRedis;
    return new RedisRolloutStore(
      redis,
      new RedisRecordTable<FirmwareEntry>(redis, `${shared.keyPrefix}fleet:firmware`),
      new RedisRecordTable<Rollout>(redis, `${shared.keyPrefix}fleet:rollouts`),
    );
  }

  async close(): Promise<void> {
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}
