import { Logger } from '@nestjs/common';
import type Redis from 'ioredis';
import { Subject } from 'rxjs';
import { ThrottledWarning } from '../core/logging/throttled-warning';
import type { DeviceEntry } from './device-entry';
import { ADMISSION_MS, type Bound, type DeviceDirectory, type DirectoryChange, type Disowned } from './device-directory';
import type { RedisChannels } from './replicas/redis-channels';

/** How long an instance counts as alive after it last said so, and how often it says so. */
export const INSTANCE_TTL_MS = 10_000;
export const INSTANCE_BEAT_MS = 3_000;

/** Devices re-registered per round trip when the store lost them. */
const REREGISTER_BATCH = 500;

/**
 * The scripts, each one atomic step. An owner key is a hash {principal, pending}: no expiry while
 * the device is online, and `max(lapse, pending)` from its last connection's end.
 */
const SCRIPTS = {
  /** KEYS: owner. ARGV: principal, admission ms. The owner, made ARGV[1] (provisionally) if there was none. */
  fleetAdmit: {
    keys: 1,
    lua: `
local owner = redis.call('HGET', KEYS[1], 'principal')
if owner then return owner end
redis.call('HSET', KEYS[1], 'principal', ARGV[1], 'pending', 0)
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return ARGV[1]`,
  },
  /** KEYS: devices, owner. ARGV: id, entry, channel, change, principal. Writes the entry, keeps the ownership while online; the entry replaced. */
  fleetClaim: {
    keys: 2,
    lua: `
local old = redis.call('HGET', KEYS[1], ARGV[1])
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
if redis.call('EXISTS', KEYS[2]) == 0 then redis.call('HSET', KEYS[2], 'principal', ARGV[5], 'pending', 0) end
redis.call('PERSIST', KEYS[2])
redis.call('PUBLISH', ARGV[3], ARGV[4])
return old`,
  },
  /** KEYS: devices. ARGV: id, connectionId, channel, entry, change. Rewrites the entry if it is still that connection's. */
  fleetUpdate: {
    keys: 1,
    lua: `
local current = redis.call('HGET', KEYS[1], ARGV[1])
if not current or cjson.decode(current).connectionId ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[4])
redis.call('PUBLISH', ARGV[3], ARGV[5])
return 1`,
  },
  /** KEYS: devices, owner. ARGV: id, connectionId, channel, change, lapse ms, now ms. Removes the entry if still that connection's, and starts the lapse. */
  fleetRelease: {
    keys: 2,
    lua: `
local current = redis.call('HGET', KEYS[1], ARGV[1])
if not current or cjson.decode(current).connectionId ~= ARGV[2] then return 0 end
redis.call('HDEL', KEYS[1], ARGV[1])
if redis.call('HGET', KEYS[2], 'bound') ~= '1' then
  local lapsesAt = tonumber(ARGV[6]) + tonumber(ARGV[5])
  local pending = tonumber(redis.call('HGET', KEYS[2], 'pending') or '0')
  if pending > lapsesAt then lapsesAt = pending end
  redis.call('PEXPIREAT', KEYS[2], lapsesAt)
end
redis.call('PUBLISH', ARGV[3], ARGV[4])
return 1`,
  },
  /** KEYS: owner. ARGV: owner, until ms, now ms. Something pending until ARGV[2]: an offline ownership lasts at least that long. */
  fleetKeep: {
    keys: 1,
    lua: `
if redis.call('HGET', KEYS[1], 'principal') ~= ARGV[1] then return 0 end
if tonumber(ARGV[2]) > tonumber(redis.call('HGET', KEYS[1], 'pending') or '0') then redis.call('HSET', KEYS[1], 'pending', ARGV[2]) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl >= 0 and tonumber(ARGV[2]) > tonumber(ARGV[3]) + ttl then redis.call('PEXPIREAT', KEYS[1], ARGV[2]) end
return 1`,
  },
  /** KEYS: devices, owner. ARGV: id, principal. The owner gives the id up, while it is offline. */
  fleetDisown: {
    keys: 2,
    lua: `
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then return 'online' end
if redis.call('HGET', KEYS[2], 'principal') ~= ARGV[2] then return 'not-owner' end
redis.call('DEL', KEYS[2])
return 'released'`,
  },
  /** KEYS: devices, owner. ARGV: id, principal. Binds the id to the principal for good, unless another holds it (bound, or connected). */
  fleetBind: {
    keys: 2,
    lua: `
local owner = redis.call('HGET', KEYS[2], 'principal')
if owner and owner ~= ARGV[2] and (redis.call('HGET', KEYS[2], 'bound') == '1' or redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1) then return 'taken' end
if owner ~= ARGV[2] then redis.call('DEL', KEYS[2]) end
redis.call('HSET', KEYS[2], 'principal', ARGV[2], 'bound', '1')
redis.call('HSETNX', KEYS[2], 'pending', 0)
redis.call('PERSIST', KEYS[2])
return 'bound'`,
  },
  /** KEYS: devices, owner. ARGV: id, principal. Ends the principal's binding: an offline id is freed, an online one lapses once its connection ends. */
  fleetUnbind: {
    keys: 2,
    lua: `
if redis.call('HGET', KEYS[2], 'principal') ~= ARGV[2] or redis.call('HGET', KEYS[2], 'bound') ~= '1' then return 0 end
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then redis.call('HDEL', KEYS[2], 'bound') else redis.call('DEL', KEYS[2]) end
return 1`,
  },
  /**
   * KEYS: devices, owner. ARGV: id, entry, channel, change, owner. After the store lost its data:
   * the ownership and the entry back, unless another connection took the id meanwhile; the owner.
   */
  fleetReregister: {
    keys: 2,
    lua: `
local owner = redis.call('HGET', KEYS[2], 'principal')
if not owner then
  owner = ARGV[5]
  redis.call('HSET', KEYS[2], 'principal', owner, 'pending', 0)
end
redis.call('PERSIST', KEYS[2])
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
  redis.call('PUBLISH', ARGV[3], ARGV[4])
end
return owner`,
  },
} as const;

type ScriptName = keyof typeof SCRIPTS;
type ScriptedRedis = Redis & { [Name in ScriptName]: (...args: (string | number)[]) => Promise<unknown> };

interface ChangeMessage {
  id: string;
  entry?: DeviceEntry;
  /** On a removal: whose entry went. */
  connectionId?: string;
}

/**
 * The directory across replicas: one Redis hash of every device online (id -> entry), a key per
 * owned id, a channel that carries each change to every instance's mirror, and a liveness key
 * per instance, renewed every {@link INSTANCE_BEAT_MS}. Every instance drops, with a
 * compare-and-delete, the entries of an instance whose key has expired (it died without its
 * goodbye), so a dead replica's devices are gone within about {@link INSTANCE_TTL_MS}.
 *
 * It heals: the liveness key is renewed with `SET ... GET`, and a key found missing means Redis
 * lost what this instance wrote (it restarted empty, was flushed, or this instance was frozen
 * long enough to be swept). Then every device this instance holds is registered again, with its
 * owner, and the mirror reloaded; until that is done, and from the moment the connection drops,
 * {@link complete} is false.
 */
export class RedisDeviceDirectory implements DeviceDirectory {
  private readonly logger = new Logger('DeviceDirectory');
  private readonly upkeepWarning = new ThrottledWarning(this.logger);
  private readonly mirror = new Map<string, DeviceEntry>();
  /** The entries this instance wrote and still holds: what it registers again after a loss. */
  private readonly own = new Map<string, DeviceEntry>();
  private readonly changeStream = new Subject<DirectoryChange>();
  private readonly alive = new Set<string>();
  private readonly redis: ScriptedRedis;
  private readonly hashKey: string;
  private readonly channel: string;
  private beat?: NodeJS.Timeout;
  /** The check under way, so the beat and a reconnection do not run two at once. */
  private checking?: Promise<void>;
  private verified = false;
  private stopped = false;
  readonly changes = this.changeStream.asObservable();

  constructor(
    readonly instanceId: string,
    redis: Redis,
    private readonly channels: RedisChannels,
    private readonly prefix: string,
    private readonly lapseMs: number,
  ) {
    for (const [name, { keys, lua }] of Object.entries(SCRIPTS)) redis.defineCommand(name, { numberOfKeys: keys, lua });
    this.redis = redis as ScriptedRedis;
    this.hashKey = `${prefix}fleet:devices`;
    this.channel = `${prefix}fleet:directory`;
    redis.on('close', () => (this.verified = false));
    redis.on('ready', () => this.check());
  }

  get complete(): boolean {
    return this.verified;
  }

  async start(): Promise<void> {
    await this.channels.listen(this.channel, (message) => this.apply(JSON.parse(message) as ChangeMessage));
    this.channels.onResubscribed(() => {
      // Changes published while the subscriber was away are lost: the mirror is reloaded.
      this.verified = false;
      this.check();
    });
    await this.verify();
    this.beat = setInterval(() => this.check(), INSTANCE_BEAT_MS);
    this.beat.unref();
  }

  /** Says goodbye: this instance's devices leave the directory and its liveness key goes. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.beat);
    await this.checking;
    const own = [...this.own.values()];
    await Promise.all(own.map((entry) => this.release(entry.id, entry.connectionId))).catch(() => undefined);
    await this.redis.del(this.livenessKey(this.instanceId)).catch(() => undefined);
    this.changeStream.complete();
  }

  async admit(id: string, principal: string): Promise<string> {
    return (await this.redis.fleetAdmit(this.ownerKey(id), principal, ADMISSION_MS)) as string;
  }

  /** What claiming `entry`'s id takes, for the claim and the re-registration scripts alike: the keys, the entry, its notice and its owner. */
  private claimArguments(entry: DeviceEntry): [string, string, string, string, string, string, string] {
    return [
      this.hashKey,
      this.ownerKey(entry.id),
      entry.id,
      JSON.stringify(entry),
      this.channel,
      JSON.stringify({ id: entry.id, entry }),
      entry.owner ?? entry.principal ?? '',
    ];
  }

  async claim(entry: DeviceEntry): Promise<DeviceEntry | undefined> {
    this.own.set(entry.id, entry);
    const replaced = (await this.redis.fleetClaim(...this.claimArguments(entry))) as string | null;
    this.apply({ id: entry.id, entry });
    return replaced ? (JSON.parse(replaced) as DeviceEntry) : undefined;
  }

  async update(entry: DeviceEntry): Promise<void> {
    if (this.own.get(entry.id)?.connectionId === entry.connectionId) this.own.set(entry.id, entry);
    await this.redis.fleetUpdate(this.hashKey, entry.id, entry.connectionId, this.channel, JSON.stringify(entry), JSON.stringify({ id: entry.id, entry }));
  }

  async release(id: string, connectionId: string): Promise<boolean> {
    if (this.own.get(id)?.connectionId === connectionId) this.own.delete(id);
    const released =
      (await this.redis.fleetRelease(
        this.hashKey,
        this.ownerKey(id),
        id,
        connectionId,
        this.channel,
        JSON.stringify({ id, connectionId }),
        this.lapseMs,
        Date.now(),
      )) === 1;
    if (released) this.apply({ id, connectionId });
    return released;
  }

  lookup(id: string): DeviceEntry | undefined {
    return this.mirror.get(id);
  }

  async owner(id: string): Promise<string | undefined> {
    return (await this.redis.hget(this.ownerKey(id), 'principal')) ?? undefined;
  }

  async keepOwned(id: string, owner: string, untilMs: number): Promise<void> {
    await this.redis.fleetKeep(this.ownerKey(id), owner, Math.ceil(untilMs), Date.now());
  }

  async disown(id: string, principal: string): Promise<Disowned> {
    return (await this.redis.fleetDisown(this.hashKey, this.ownerKey(id), id, principal)) as Disowned;
  }

  async bind(id: string, principal: string): Promise<Bound> {
    return (await this.redis.fleetBind(this.hashKey, this.ownerKey(id), id, principal)) as Bound;
  }

  async unbind(id: string, principal: string): Promise<boolean> {
    return (await this.redis.fleetUnbind(this.hashKey, this.ownerKey(id), id, principal)) === 1;
  }

  all(): IterableIterator<DeviceEntry> {
    return this.mirror.values();
  }

  get size(): number {
    return this.mirror.size;
  }

  isAlive(instance: string): boolean {
    return instance === this.instanceId || this.alive.has(instance);
  }

  private apply(change: ChangeMessage): void {
    const current = this.mirror.get(change.id);
    if (change.entry) {
      this.mirror.set(change.id, change.entry);
      this.alive.add(change.entry.instance);
      this.changeStream.next({ id: change.id, entry: change.entry });
    } else if (current && current.connectionId === change.connectionId) {
      this.mirror.delete(change.id);
      this.changeStream.next({ id: change.id });
    }
  }

  /** Runs {@link verify} unless one runs already; its failure is retried at the next beat. */
  private check(): void {
    if (this.checking || this.stopped || this.redis.status !== 'ready') return;
    this.checking = this.verify()
      .catch((error: Error) => this.upkeepWarning.warn(`Device directory upkeep failed (retried every ${INSTANCE_BEAT_MS / 1000} s): ${error.message}`))
      .finally(() => (this.checking = undefined));
  }

  /**
   * Renews the liveness key; if it was gone, registers this instance's devices again. Reloads the
   * mirror when it may have missed changes, then drops the devices of dead instances.
   */
  private async verify(): Promise<void> {
    const previous = await this.redis.set(this.livenessKey(this.instanceId), '1', 'PX', INSTANCE_TTL_MS, 'GET');
    if (previous === null && this.own.size > 0) await this.reregister();
    if (!this.verified) await this.reload();
    await this.sweep();
    this.verified = true;
  }

  private async reregister(): Promise<void> {
    const entries = [...this.own.values()];
    this.logger.warn(
      `Redis lost this instance's devices (restarted empty, flushed, or this instance was unreachable too long): registering ${entries.length} again`,
    );
    for (let start = 0; start < entries.length; start += REREGISTER_BATCH) {
      const batch = entries.slice(start, start + REREGISTER_BATCH);
      const pipeline = this.redis.pipeline() as unknown as { [Name in ScriptName]: (...args: (string | number)[]) => void } & {
        exec(): Promise<[Error | null, unknown][] | null>;
      };
      for (const entry of batch) {
        pipeline.fleetReregister(...this.claimArguments(entry));
      }
      const results = (await pipeline.exec()) ?? [];
      results.forEach(([error, owner], index) => {
        const entry = batch[index];
        if (error) throw error;
        if (owner !== (entry.owner ?? entry.principal ?? '')) {
          this.logger.warn(`Device ${entry.id}: another principal took its id while Redis had lost it; its connection here keeps the id until it closes`);
        }
      });
    }
  }

  /** The whole hash into the mirror (at start, and after the subscriber reconnected and may have missed changes). */
  private async reload(): Promise<void> {
    const stored = await this.redis.hgetall(this.hashKey);
    const seen = new Set<string>();
    for (const [id, serialized] of Object.entries(stored)) {
      seen.add(id);
      const entry = JSON.parse(serialized) as DeviceEntry;
      if (JSON.stringify(this.mirror.get(id)) === serialized) continue;
      this.mirror.set(id, entry);
      this.changeStream.next({ id, entry });
    }
    for (const id of [...this.mirror.keys()]) {
      if (seen.has(id)) continue;
      this.mirror.delete(id);
      this.changeStream.next({ id });
    }
  }

  /** Finds the instances of the mirror whose liveness key has expired and removes their devices. */
  private async sweep(): Promise<void> {
    const instances = new Set<string>();
    for (const entry of this.mirror.values()) if (entry.instance !== this.instanceId) instances.add(entry.instance);
    if (instances.size === 0) return;
    const names = [...instances];
    const exists = await Promise.all(names.map((instance) => this.redis.exists(this.livenessKey(instance))));
    const dead = new Set(names.filter((_, index) => exists[index] === 0));
    for (const instance of names) if (!dead.has(instance)) this.alive.add(instance);
    if (dead.size === 0) return;
    for (const instance of dead) this.alive.delete(instance);
    const orphans = [...this.mirror.values()].filter((entry) => dead.has(entry.instance));
    this.logger.warn(`Instance(s) ${[...dead].join(', ')} stopped without a goodbye: ${orphans.length} device(s) leave the directory`);
    await Promise.all(orphans.map((entry) => this.release(entry.id, entry.connectionId)));
  }

  private ownerKey(id: string): string {
    return `${this.prefix}fleet:owner:${id}`;
  }

  private livenessKey(instance: string): string {
    return `${this.prefix}fleet:instance:${instance}`;
  }
}
