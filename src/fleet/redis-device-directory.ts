import { Logger } from '@nestjs/common';
import type Redis from 'ioredis';
import { Subject } from 'rxjs';
import type { DeviceEntry } from './device-entry';
import type { DeviceDirectory, DirectoryChange } from './device-directory';
import type { RedisChannels } from './redis-channels';

/** How long an instance counts as alive after it last said so, and how often it says so. */
export const INSTANCE_TTL_MS = 10_000;
export const INSTANCE_BEAT_MS = 3_000;

/** Writes the entry and its owner and tells every instance; the entry it replaced, if any. KEYS: devices, owners. ARGV: id, entry, channel, change, owner. */
const CLAIM = `
local old = redis.call('HGET', KEYS[1], ARGV[1])
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[5])
redis.call('PUBLISH', ARGV[3], ARGV[4])
return old`;

/** Rewrites (ARGV[4] set) or removes (ARGV[4] empty) an entry only if it is still connection ARGV[2]'s. ARGV: id, connectionId, channel, entry, change. */
const IF_STILL_THEIRS = `
local current = redis.call('HGET', KEYS[1], ARGV[1])
if not current or cjson.decode(current).connectionId ~= ARGV[2] then return 0 end
if ARGV[4] == '' then redis.call('HDEL', KEYS[1], ARGV[1]) else redis.call('HSET', KEYS[1], ARGV[1], ARGV[4]) end
redis.call('PUBLISH', ARGV[3], ARGV[5])
return 1`;

interface ChangeMessage {
  id: string;
  entry?: DeviceEntry;
  /** On a removal: whose entry went. */
  connectionId?: string;
}

/**
 * The directory across replicas: one Redis hash of every device online (id -> entry), a
 * channel that carries each change to every instance's mirror, and a liveness key per instance,
 * renewed every {@link INSTANCE_BEAT_MS}. Every instance drops, with a compare-and-delete, the
 * entries of an instance whose key has expired (it died without its goodbye), so a dead
 * replica's devices are gone within about {@link INSTANCE_TTL_MS}.
 */
export class RedisDeviceDirectory implements DeviceDirectory {
  private readonly logger = new Logger('DeviceDirectory');
  private readonly mirror = new Map<string, DeviceEntry>();
  private readonly changeStream = new Subject<DirectoryChange>();
  private readonly alive = new Set<string>();
  private readonly hashKey: string;
  private readonly ownersKey: string;
  private readonly channel: string;
  private beat?: NodeJS.Timeout;
  readonly changes = this.changeStream.asObservable();

  constructor(
    readonly instanceId: string,
    private readonly redis: Redis,
    private readonly channels: RedisChannels,
    private readonly prefix: string,
  ) {
    this.hashKey = `${prefix}fleet:devices`;
    this.ownersKey = `${prefix}fleet:owners`;
    this.channel = `${prefix}fleet:directory`;
  }

  async start(): Promise<void> {
    await this.renewLiveness();
    await this.channels.listen(this.channel, (message) => this.apply(JSON.parse(message) as ChangeMessage));
    this.channels.onResubscribed(() => void this.reload().catch((error: Error) => this.logger.warn(`Could not reload the device directory: ${error.message}`)));
    await this.reload();
    await this.sweep();
    this.beat = setInterval(() => void this.tick(), INSTANCE_BEAT_MS);
    this.beat.unref();
  }

  /** Says goodbye: this instance's devices leave the directory and its liveness key goes. */
  async stop(): Promise<void> {
    clearInterval(this.beat);
    const own = [...this.mirror.values()].filter((entry) => entry.instance === this.instanceId);
    await Promise.all(own.map((entry) => this.release(entry.id, entry.connectionId))).catch(() => undefined);
    await this.redis.del(this.livenessKey(this.instanceId)).catch(() => undefined);
    this.changeStream.complete();
  }

  async claim(entry: DeviceEntry): Promise<DeviceEntry | undefined> {
    const serialized = JSON.stringify(entry);
    const change = JSON.stringify({ id: entry.id, entry });
    const replaced = (await this.redis.eval(CLAIM, 2, this.hashKey, this.ownersKey, entry.id, serialized, this.channel, change, entry.principal ?? '')) as
      string | null;
    this.apply({ id: entry.id, entry });
    return replaced ? (JSON.parse(replaced) as DeviceEntry) : undefined;
  }

  async update(entry: DeviceEntry): Promise<void> {
    await this.redis.eval(
      IF_STILL_THEIRS,
      1,
      this.hashKey,
      entry.id,
      entry.connectionId,
      this.channel,
      JSON.stringify(entry),
      JSON.stringify({ id: entry.id, entry }),
    );
  }

  async release(id: string, connectionId: string): Promise<boolean> {
    const released = (await this.redis.eval(IF_STILL_THEIRS, 1, this.hashKey, id, connectionId, this.channel, '', JSON.stringify({ id, connectionId }))) === 1;
    if (released) this.apply({ id, connectionId });
    return released;
  }

  lookup(id: string): DeviceEntry | undefined {
    return this.mirror.get(id);
  }

  async fetch(id: string): Promise<DeviceEntry | undefined> {
    const serialized = await this.redis.hget(this.hashKey, id);
    return serialized ? (JSON.parse(serialized) as DeviceEntry) : undefined;
  }

  async lastOwner(id: string): Promise<string | undefined> {
    return (await this.redis.hget(this.ownersKey, id)) ?? undefined;
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

  private async tick(): Promise<void> {
    try {
      await this.renewLiveness();
      await this.sweep();
    } catch (error) {
      this.logger.warn(`Device directory upkeep failed: ${(error as Error).message}`);
    }
  }

  private renewLiveness(): Promise<unknown> {
    return this.redis.set(this.livenessKey(this.instanceId), '1', 'PX', INSTANCE_TTL_MS);
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

  private livenessKey(instance: string): string {
    return `${this.prefix}fleet:instance:${instance}`;
  }
}
