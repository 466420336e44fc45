import type Redis from 'ioredis';

/** A push kept for an offline device until it connects again or its hold runs out. */
export interface HeldPush {
  kind: 'say' | 'turn';
  turnId: string;
  text: string;
  interrupt?: boolean;
  reminderId?: string;
  /** Epoch ms after which it is dropped unsaid. */
  expiresAt: number;
}

/**
 * Pushes held for offline devices, per device in order and bounded: in memory on one instance,
 * in Redis across replicas (a device may come back on any of them).
 */
export interface HeldPushes {
  /** Keeps `push` for `deviceId`; false when the device already has `max` waiting. */
  hold(deviceId: string, push: HeldPush, max: number): Promise<boolean>;
  /** Takes every push held for `deviceId` that has not run out, oldest first. */
  take(deviceId: string): Promise<HeldPush[]>;
}

const current = (pushes: HeldPush[]) => pushes.filter((push) => push.expiresAt > Date.now());

export class MemoryHeldPushes implements HeldPushes {
  private readonly byDevice = new Map<string, HeldPush[]>();

  /** Devices with pushes held at most: a caller holding for ever more ids meets a bound, not the heap's end. */
  constructor(private readonly maxDevices = 10_000) {}

  async hold(deviceId: string, push: HeldPush, max: number): Promise<boolean> {
    const held = current(this.byDevice.get(deviceId) ?? []);
    if (held.length >= max) return false;
    if (held.length === 0 && this.byDevice.size >= this.maxDevices) {
      for (const [id, pushes] of this.byDevice) if (current(pushes).length === 0) this.byDevice.delete(id);
      if (this.byDevice.size >= this.maxDevices) return false;
    }
    held.push(push);
    this.byDevice.set(deviceId, held);
    return true;
  }

  async take(deviceId: string): Promise<HeldPush[]> {
    const held = this.byDevice.get(deviceId) ?? [];
    this.byDevice.delete(deviceId);
    return current(held);
  }
}

/** Appends ARGV[1] unless the list holds ARGV[2] already; the list lives until the longest hold in it runs out (ARGV[3] ms). */
const HOLD = `
if redis.call('LLEN', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('RPUSH', KEYS[1], ARGV[1])
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[3]) then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
return 1`;

const TAKE = `
local held = redis.call('LRANGE', KEYS[1], 0, -1)
redis.call('DEL', KEYS[1])
return held`;

export class RedisHeldPushes implements HeldPushes {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  async hold(deviceId: string, push: HeldPush, max: number): Promise<boolean> {
    const ttl = Math.max(1, push.expiresAt - Date.now());
    return (await this.redis.eval(HOLD, 1, this.key(deviceId), JSON.stringify(push), max, ttl)) === 1;
  }

  async take(deviceId: string): Promise<HeldPush[]> {
    const held = (await this.redis.eval(TAKE, 1, this.key(deviceId))) as string[];
    return current(held.map((serialized) => JSON.parse(serialized) as HeldPush));
  }

  private key(deviceId: string): string {
    return `${this.prefix}fleet:held:${deviceId}`;
  }
}
