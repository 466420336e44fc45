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
  /** Who asked for it to be held (`''`: the gateway itself): what it counts against. */
  by: string;
}

/** Whose device a push is held for: the id and its owner, so only a connection of that owner gets it. */
export interface HeldFor {
  owner: string;
  deviceId: string;
}

/** The bounds a new held push must fit in. */
export interface HoldLimits {
  perDevice: number;
  perPrincipal: number;
}

/** Why a push could not be held: the device's pushes, the asking principal's, or this instance's memory are full. */
export type HoldRefusal = 'device' | 'principal' | 'instance';

/**
 * Pushes held for offline devices, per owner and device, in order and bounded per device and per
 * asking principal (one principal cannot fill what another needs): in memory on one instance, in
 * Redis across replicas (a device may come back on any of them). A push is taken off only once it
 * was delivered ({@link next}, then {@link done}), so a connection that drops while they drain
 * leaves the rest held, and an instance that dies loses none.
 */
export interface HeldPushes {
  /** Keeps `push`; why not when a bound is reached. */
  hold(to: HeldFor, push: HeldPush, limits: HoldLimits): Promise<HoldRefusal | undefined>;
  /** The oldest push held that has not run out (those that have are dropped on the way), without taking it off. */
  next(to: HeldFor): Promise<HeldPush | undefined>;
  /** Takes `push` off, once delivered, if it is still the oldest (another connection of the device may have delivered it). */
  done(to: HeldFor, push: HeldPush): Promise<void>;
  /** Drops everything held for the device (its id was released); what it dropped. */
  drop(deviceId: string, owner: string): Promise<HeldPush[]>;
}

/** Pushes one instance keeps in memory at most, whoever asked: past it, holding needs Redis. */
export const MEMORY_HOLD_MAX = 100_000;

export class MemoryHeldPushes implements HeldPushes {
  private readonly byDevice = new Map<string, HeldPush[]>();
  /** The turn ids held by each asking principal, with when each runs out. */
  private readonly byPrincipal = new Map<string, Map<string, number>>();
  private count = 0;

  constructor(
    private readonly max = MEMORY_HOLD_MAX,
    private readonly now: () => number = Date.now,
  ) {}

  async hold(to: HeldFor, push: HeldPush, limits: HoldLimits): Promise<HoldRefusal | undefined> {
    const asked = this.current(this.byPrincipal.get(push.by));
    if (asked.size >= limits.perPrincipal) return 'principal';
    const key = keyOf(to);
    const held = this.byDevice.get(key) ?? [];
    if (held.length >= limits.perDevice) return 'device';
    if (this.count >= this.max) this.sweep();
    if (this.count >= this.max) return 'instance';
    held.push(push);
    this.byDevice.set(key, held);
    asked.set(push.turnId, push.expiresAt);
    this.byPrincipal.set(push.by, asked);
    this.count += 1;
    return undefined;
  }

  async next(to: HeldFor): Promise<HeldPush | undefined> {
    const key = keyOf(to);
    const held = this.byDevice.get(key);
    while (held && held.length > 0 && held[0].expiresAt <= this.now()) this.forget(key, held[0]);
    return held?.[0];
  }

  async done(to: HeldFor, push: HeldPush): Promise<void> {
    const key = keyOf(to);
    if (this.byDevice.get(key)?.[0]?.turnId === push.turnId) this.forget(key, push);
  }

  async drop(deviceId: string, owner: string): Promise<HeldPush[]> {
    const key = keyOf({ deviceId, owner });
    const held = [...(this.byDevice.get(key) ?? [])];
    for (const push of held) this.forget(key, push);
    return held;
  }

  /** `held` without the holds that ran out: a principal's count is of pushes still waiting. */
  private current(held: Map<string, number> | undefined): Map<string, number> {
    if (!held) return new Map();
    const now = this.now();
    for (const [turnId, expiresAt] of held) if (expiresAt <= now) held.delete(turnId);
    return held;
  }

  /** Takes the oldest push of `key` off (it is `push`). */
  private forget(key: string, push: HeldPush): void {
    const held = this.byDevice.get(key)!;
    held.shift();
    if (held.length === 0) this.byDevice.delete(key);
    const asked = this.byPrincipal.get(push.by);
    asked?.delete(push.turnId);
    if (asked?.size === 0) this.byPrincipal.delete(push.by);
    this.count -= 1;
  }

  /** Drops every push whose hold ran out. */
  private sweep(): void {
    for (const [key, held] of this.byDevice) {
      const now = this.now();
      for (const push of held.filter((candidate) => candidate.expiresAt <= now)) {
        held.splice(held.indexOf(push), 1);
        this.byPrincipal.get(push.by)?.delete(push.turnId);
        this.count -= 1;
      }
      if (held.length === 0) this.byDevice.delete(key);
    }
    for (const [principal, asked] of this.byPrincipal) if (asked.size === 0) this.byPrincipal.delete(principal);
  }
}

/**
 * KEYS: the device's list, the principal's set. ARGV: push, per device, per principal, now, turn id, expires at.
 * The list and the set live until the longest hold in them runs out.
 */
const HOLD = `
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[4])
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[3]) then return 'principal' end
if redis.call('LLEN', KEYS[1]) >= tonumber(ARGV[2]) then return 'device' end
redis.call('RPUSH', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[2], ARGV[6], ARGV[5])
for _, key in ipairs(KEYS) do
  if redis.call('PTTL', key) < tonumber(ARGV[6]) - tonumber(ARGV[4]) then redis.call('PEXPIREAT', key, ARGV[6]) end
end
return ''`;

/** KEYS: the device's list. ARGV: now. The oldest push that has not run out; those that have are dropped. */
const NEXT = `
while true do
  local head = redis.call('LINDEX', KEYS[1], 0)
  if not head then return false end
  if cjson.decode(head).expiresAt > tonumber(ARGV[1]) then return head end
  redis.call('LPOP', KEYS[1])
end`;

/** KEYS: the device's list, the principal's set. ARGV: turn id. Takes the oldest push off if it is that one. */
const DONE = `
local head = redis.call('LINDEX', KEYS[1], 0)
if head and cjson.decode(head).turnId == ARGV[1] then redis.call('LPOP', KEYS[1]) end
redis.call('ZREM', KEYS[2], ARGV[1])
return 1`;

/** KEYS: the device's list. Every push in it, taken off. */
const TAKE_ALL = `
local held = redis.call('LRANGE', KEYS[1], 0, -1)
redis.call('DEL', KEYS[1])
return held`;

export class RedisHeldPushes implements HeldPushes {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  async hold(to: HeldFor, push: HeldPush, limits: HoldLimits): Promise<HoldRefusal | undefined> {
    const refusal = (await this.redis.eval(
      HOLD,
      2,
      this.deviceKey(to),
      this.principalKey(push.by),
      JSON.stringify(push),
      limits.perDevice,
      limits.perPrincipal,
      Date.now(),
      push.turnId,
      push.expiresAt,
    )) as string;
    return refusal === '' ? undefined : (refusal as HoldRefusal);
  }

  async next(to: HeldFor): Promise<HeldPush | undefined> {
    const head = (await this.redis.eval(NEXT, 1, this.deviceKey(to), Date.now())) as string | null;
    return head ? (JSON.parse(head) as HeldPush) : undefined;
  }

  async done(to: HeldFor, push: HeldPush): Promise<void> {
    await this.redis.eval(DONE, 2, this.deviceKey(to), this.principalKey(push.by), push.turnId);
  }

  async drop(deviceId: string, owner: string): Promise<HeldPush[]> {
    const key = this.deviceKey({ deviceId, owner });
    const held = (await this.redis.eval(TAKE_ALL, 1, key)) as string[];
    const pushes = held.map((serialized) => JSON.parse(serialized) as HeldPush);
    if (pushes.length > 0) {
      const pipeline = this.redis.pipeline();
      for (const push of pushes) pipeline.zrem(this.principalKey(push.by), push.turnId);
      await pipeline.exec();
    }
    return pushes;
  }

  /** `/` is outside the device id's alphabet, so no id and owner run into another's. */
  private deviceKey({ deviceId, owner }: HeldFor): string {
    return `${this.prefix}fleet:held:${deviceId}/${owner}`;
  }

  private principalKey(principal: string): string {
    return `${this.prefix}fleet:held-by:${principal}`;
  }
}

function keyOf({ deviceId, owner }: HeldFor): string {
  return `${deviceId}/${owner}`;
}
