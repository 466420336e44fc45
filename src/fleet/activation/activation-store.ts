import type Redis from 'ioredis';
import { COMMAND_TIMEOUT_MS } from '../../core/redis/redis-connection';
import type { SharedRedis } from '../../core/state/shared-redis';

/** A code handed to an unbound device, waiting for its owner to enter it. */
export interface PendingActivation {
  /** Six digits, as the firmware speaks them. */
  code: string;
  deviceId: string;
  /** The `Client-Id` the device asked with: only that device's later requests are answered as its. */
  clientId: string;
  /** What the device signs with its eFuse key (serial-number devices), and echoes when it polls. */
  challenge: string;
  /** The device's `Serial-Number`, when it sent one: it must then prove its key (HMAC of the challenge). */
  serial?: string;
  /** Whether it answered the challenge with the right HMAC already. */
  proven: boolean;
}

/** A device its owner activated: whose it is, which client it was, and where its credential stands. */
export interface Binding {
  deviceId: string;
  principal: string;
  clientId: string;
  /** ISO 8601. */
  boundAt: string;
  challenge: string;
  /** A serial-number device: every poll of its activation must answer its challenge. */
  serial: boolean;
  /** A serial-number device bound before it answered its challenge: no credential until it does. */
  needsProof: boolean;
  /** SHA-256 (hex) of the device's secret; absent before the first is issued and after a revocation. */
  secretHash?: string;
  /** Whether the device's next configuration answer issues it a (new) secret. */
  issue: boolean;
}

/**
 * Where activation keeps what every instance must agree on: live codes (each expires with the
 * code's lifetime, and is taken once: {@link takeCode}), bindings, the index from a device
 * secret's hash to its device, and the operators' activation keys. Mutations of one binding are
 * one atomic step each, so a rotation racing an issuance, or a revocation racing a reconnect,
 * cannot leave two secrets or a revoked one alive.
 */
export interface ActivationStore {
  /** The live code of `deviceId` asked for by `clientId`, if any. */
  pending(deviceId: string, clientId: string): Promise<PendingActivation | undefined>;
  /** Stores `candidate` for `ttlMs` unless its code is live already (`collision`: draw another). */
  openPending(candidate: PendingActivation, ttlMs: number): Promise<'opened' | 'collision' | 'full'>;
  /** The device answered its challenge: its code (if still live) remembers it. */
  provePending(pending: PendingActivation): Promise<void>;
  /** The code's activation, removed in the same step: a code binds once. */
  takeCode(code: string): Promise<PendingActivation | undefined>;
  binding(deviceId: string): Promise<Binding | undefined>;
  /** Writes a new binding (a secret of an earlier one is dropped). */
  putBinding(binding: Binding): Promise<void>;
  /** A serial-number device answered its challenge after it was bound. */
  proveBinding(deviceId: string): Promise<void>;
  /** Records `secretHash` as the device's secret if one is due and the request is its bound client's; whether it was. */
  issueSecret(deviceId: string, clientId: string, secretHash: string): Promise<boolean>;
  /** The owner asks for a new secret at the device's next configuration answer (the current one works until then). */
  rotate(deviceId: string, principal: string): Promise<boolean>;
  /** The owner drops the device's secret: it no longer authenticates, and none is issued until a rotation. */
  revoke(deviceId: string, principal: string): Promise<boolean>;
  /** The owner ends the binding, its secret with it. */
  unbind(deviceId: string, principal: string): Promise<boolean>;
  /** The device and owner a secret's hash is the current secret of. */
  deviceOfSecret(secretHash: string): Promise<{ deviceId: string; principal: string } | undefined>;
  /** The HMAC key an operator provisioned for a serial-number device (its eFuse key). */
  setKey(deviceId: string, key: Buffer): Promise<void>;
  key(deviceId: string): Promise<Buffer | undefined>;
  close(): Promise<void>;
}

/** DI tokens of the {@link ActivationStore} and of the rate limiter activation attempts are counted by. */
export const ACTIVATION_STORE = Symbol('ACTIVATION_STORE');
export const ACTIVATION_LIMITER = Symbol('ACTIVATION_LIMITER');

/** Codes one instance keeps live at once, at most (memory only; Redis keys expire by themselves). */
export const MAX_PENDING_IN_MEMORY = 10_000;

/** One instance's memory: for a gateway without Redis. */
export class MemoryActivationStore implements ActivationStore {
  private readonly codes = new Map<string, { pending: PendingActivation; expiresAt: number }>();
  private readonly byDevice = new Map<string, string>();
  private readonly bindings = new Map<string, Binding>();
  private readonly secrets = new Map<string, string>();
  private readonly keys = new Map<string, Buffer>();

  constructor(private readonly now: () => number = Date.now) {}

  async pending(deviceId: string, clientId: string): Promise<PendingActivation | undefined> {
    const code = this.byDevice.get(deviceKey(deviceId, clientId));
    const live = code === undefined ? undefined : this.live(code);
    return live && live.deviceId === deviceId && live.clientId === clientId ? { ...live } : undefined;
  }

  async openPending(candidate: PendingActivation, ttlMs: number): Promise<'opened' | 'collision' | 'full'> {
    if (this.live(candidate.code)) return 'collision';
    if (this.codes.size >= MAX_PENDING_IN_MEMORY) this.sweep();
    if (this.codes.size >= MAX_PENDING_IN_MEMORY) return 'full';
    this.codes.set(candidate.code, { pending: { ...candidate }, expiresAt: this.now() + ttlMs });
    this.byDevice.set(deviceKey(candidate.deviceId, candidate.clientId), candidate.code);
    return 'opened';
  }

  async provePending(pending: PendingActivation): Promise<void> {
    const live = this.live(pending.code);
    if (live && live.deviceId === pending.deviceId) live.proven = true;
  }

  async takeCode(code: string): Promise<PendingActivation | undefined> {
    const live = this.live(code);
    if (!live) return undefined;
    this.codes.delete(code);
    const key = deviceKey(live.deviceId, live.clientId);
    if (this.byDevice.get(key) === code) this.byDevice.delete(key);
    return live;
  }

  async binding(deviceId: string): Promise<Binding | undefined> {
    const binding = this.bindings.get(deviceId);
    return binding && { ...binding };
  }

  async putBinding(binding: Binding): Promise<void> {
    const old = this.bindings.get(binding.deviceId);
    if (old?.secretHash) this.secrets.delete(old.secretHash);
    this.bindings.set(binding.deviceId, { ...binding });
  }

  async proveBinding(deviceId: string): Promise<void> {
    const binding = this.bindings.get(deviceId);
    if (binding) binding.needsProof = false;
  }

  async issueSecret(deviceId: string, clientId: string, secretHash: string): Promise<boolean> {
    const binding = this.bindings.get(deviceId);
    if (!binding || binding.clientId !== clientId || !binding.issue || binding.needsProof) return false;
    if (binding.secretHash) this.secrets.delete(binding.secretHash);
    binding.secretHash = secretHash;
    binding.issue = false;
    this.secrets.set(secretHash, deviceId);
    return true;
  }

  async rotate(deviceId: string, principal: string): Promise<boolean> {
    const binding = this.owned(deviceId, principal);
    if (binding) binding.issue = true;
    return binding !== undefined;
  }

  async revoke(deviceId: string, principal: string): Promise<boolean> {
    const binding = this.owned(deviceId, principal);
    if (!binding) return false;
    if (binding.secretHash) this.secrets.delete(binding.secretHash);
    binding.secretHash = undefined;
    binding.issue = false;
    return true;
  }

  async unbind(deviceId: string, principal: string): Promise<boolean> {
    const binding = this.owned(deviceId, principal);
    if (!binding) return false;
    if (binding.secretHash) this.secrets.delete(binding.secretHash);
    this.bindings.delete(deviceId);
    return true;
  }

  async deviceOfSecret(secretHash: string): Promise<{ deviceId: string; principal: string } | undefined> {
    const deviceId = this.secrets.get(secretHash);
    const binding = deviceId === undefined ? undefined : this.bindings.get(deviceId);
    return binding?.secretHash === secretHash ? { deviceId: binding.deviceId, principal: binding.principal } : undefined;
  }

  async setKey(deviceId: string, key: Buffer): Promise<void> {
    this.keys.set(deviceId, Buffer.from(key));
  }

  async key(deviceId: string): Promise<Buffer | undefined> {
    return this.keys.get(deviceId);
  }

  async close(): Promise<void> {}

  private owned(deviceId: string, principal: string): Binding | undefined {
    const binding = this.bindings.get(deviceId);
    return binding?.principal === principal ? binding : undefined;
  }

  private live(code: string): PendingActivation | undefined {
    const entry = this.codes.get(code);
    if (entry && entry.expiresAt <= this.now()) {
      this.codes.delete(code);
      return undefined;
    }
    return entry?.pending;
  }

  private sweep(): void {
    const now = this.now();
    for (const [code, entry] of this.codes) if (entry.expiresAt <= now) this.codes.delete(code);
    for (const [key, code] of this.byDevice) if (!this.codes.has(code)) this.byDevice.delete(key);
  }
}

const deviceKey = (deviceId: string, clientId: string): string => `${deviceId}\0${clientId}`;

/** The scripts, one atomic step each. A binding is a hash: principal, clientId, boundAt, challenge, needsProof, secret, issue. */
const SCRIPTS = {
  /** KEYS: binding. ARGV: fields as name/value pairs..., secret index prefix. Replaces the binding; an earlier secret is dropped. */
  activationPut: {
    keys: 1,
    lua: `
local old = redis.call('HGET', KEYS[1], 'secret')
if old then redis.call('DEL', ARGV[#ARGV] .. old) end
redis.call('DEL', KEYS[1])
for i = 1, #ARGV - 1, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
return 1`,
  },
  /** KEYS: binding. ARGV: client id, secret hash, index prefix, device id. Records the secret if one is due to that client. */
  activationIssue: {
    keys: 1,
    lua: `
if redis.call('HGET', KEYS[1], 'clientId') ~= ARGV[1] or redis.call('HGET', KEYS[1], 'issue') ~= '1' or redis.call('HGET', KEYS[1], 'needsProof') == '1' then return 0 end
local old = redis.call('HGET', KEYS[1], 'secret')
if old then redis.call('DEL', ARGV[3] .. old) end
redis.call('HSET', KEYS[1], 'secret', ARGV[2], 'issue', '0')
redis.call('SET', ARGV[3] .. ARGV[2], ARGV[4])
return 1`,
  },
  /** KEYS: binding. ARGV: principal, action (rotate, revoke, unbind), index prefix. The owner's change to its binding. */
  activationOwnerChange: {
    keys: 1,
    lua: `
if redis.call('HGET', KEYS[1], 'principal') ~= ARGV[1] then return 0 end
if ARGV[2] == 'rotate' then
  redis.call('HSET', KEYS[1], 'issue', '1')
  return 1
end
local old = redis.call('HGET', KEYS[1], 'secret')
if old then redis.call('DEL', ARGV[3] .. old) end
if ARGV[2] == 'unbind' then
  redis.call('DEL', KEYS[1])
else
  redis.call('HDEL', KEYS[1], 'secret')
  redis.call('HSET', KEYS[1], 'issue', '0')
end
return 1`,
  },
} as const;

type ScriptName = keyof typeof SCRIPTS;
type ScriptedRedis = Redis & { [Name in ScriptName]: (...args: (string | number)[]) => Promise<unknown> };

/**
 * Activation in Redis, shared by every replica: `activation:code:<code>` (the pending activation,
 * expiring with the code, taken with `GETDEL`), `activation:device:<id>\0<client>` (its live
 * code), `activation:bound:<id>` (a hash, no expiry), `activation:secret:<sha256>` (the device
 * of a secret) and `activation:key:<id>` (an HMAC key, hex).
 */
export class RedisActivationStore implements ActivationStore {
  private constructor(
    private readonly redis: ScriptedRedis,
    private readonly prefix: string,
  ) {}

  static async connect(shared: SharedRedis): Promise<RedisActivationStore> {
    const [redis] = await shared.connect(1, (client) => {
      for (const [name, { keys, lua }] of Object.entries(SCRIPTS)) client.defineCommand(name, { numberOfKeys: keys, lua });
    });
    redis.options.commandTimeout = COMMAND_TIMEOUT_MS;
    return new RedisActivationStore(redis as ScriptedRedis, `${shared.keyPrefix}activation:`);
  }

  async pending(deviceId: string, clientId: string): Promise<PendingActivation | undefined> {
    const code = await this.redis.get(this.deviceKey(deviceId, clientId));
    if (code === null) return undefined;
    const stored = await this.redis.get(this.codeKey(code));
    const pending = stored === null ? undefined : (JSON.parse(stored) as PendingActivation);
    return pending && pending.deviceId === deviceId && pending.clientId === clientId ? pending : undefined;
  }

  async openPending(candidate: PendingActivation, ttlMs: number): Promise<'opened' | 'collision' | 'full'> {
    const set = await this.redis.set(this.codeKey(candidate.code), JSON.stringify(candidate), 'PX', ttlMs, 'NX');
    if (set === null) return 'collision';
    await this.redis.set(this.deviceKey(candidate.deviceId, candidate.clientId), candidate.code, 'PX', ttlMs);
    return 'opened';
  }

  async provePending(pending: PendingActivation): Promise<void> {
    // XX: a code taken meanwhile is not brought back.
    await this.redis.set(this.codeKey(pending.code), JSON.stringify({ ...pending, proven: true }), 'KEEPTTL', 'XX');
  }

  async takeCode(code: string): Promise<PendingActivation | undefined> {
    const stored = await this.redis.getdel(this.codeKey(code));
    if (stored === null) return undefined;
    const pending = JSON.parse(stored) as PendingActivation;
    await this.redis.del(this.deviceKey(pending.deviceId, pending.clientId));
    return pending;
  }

  async binding(deviceId: string): Promise<Binding | undefined> {
    const fields = await this.redis.hgetall(this.bindingKey(deviceId));
    if (fields.principal === undefined) return undefined;
    return {
      deviceId,
      principal: fields.principal,
      clientId: fields.clientId,
      boundAt: fields.boundAt,
      challenge: fields.challenge,
      serial: fields.serial === '1',
      needsProof: fields.needsProof === '1',
      ...(fields.secret !== undefined && { secretHash: fields.secret }),
      issue: fields.issue === '1',
    };
  }

  async putBinding(binding: Binding): Promise<void> {
    const fields = [
      ['principal', binding.principal],
      ['clientId', binding.clientId],
      ['boundAt', binding.boundAt],
      ['challenge', binding.challenge],
      ['serial', binding.serial ? '1' : '0'],
      ['needsProof', binding.needsProof ? '1' : '0'],
      ['issue', binding.issue ? '1' : '0'],
      ...(binding.secretHash ? [['secret', binding.secretHash]] : []),
    ].flat();
    await this.redis.activationPut(this.bindingKey(binding.deviceId), ...fields, this.secretPrefix());
  }

  async proveBinding(deviceId: string): Promise<void> {
    // Only a binding that still exists: HSET on a deleted one would make a binding with no owner.
    const key = this.bindingKey(deviceId);
    await this.redis.eval(`if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('HSET', KEYS[1], 'needsProof', '0') end return 1`, 1, key);
  }

  async issueSecret(deviceId: string, clientId: string, secretHash: string): Promise<boolean> {
    return (await this.redis.activationIssue(this.bindingKey(deviceId), clientId, secretHash, this.secretPrefix(), deviceId)) === 1;
  }

  rotate(deviceId: string, principal: string): Promise<boolean> {
    return this.ownerChange(deviceId, principal, 'rotate');
  }

  revoke(deviceId: string, principal: string): Promise<boolean> {
    return this.ownerChange(deviceId, principal, 'revoke');
  }

  unbind(deviceId: string, principal: string): Promise<boolean> {
    return this.ownerChange(deviceId, principal, 'unbind');
  }

  async deviceOfSecret(secretHash: string): Promise<{ deviceId: string; principal: string } | undefined> {
    const deviceId = await this.redis.get(this.secretPrefix() + secretHash);
    if (deviceId === null) return undefined;
    const [principal, current] = await this.redis.hmget(this.bindingKey(deviceId), 'principal', 'secret');
    return principal !== null && current === secretHash ? { deviceId, principal } : undefined;
  }

  async setKey(deviceId: string, key: Buffer): Promise<void> {
    await this.redis.set(`${this.prefix}key:${deviceId}`, key.toString('hex'));
  }

  async key(deviceId: string): Promise<Buffer | undefined> {
    const hex = await this.redis.get(`${this.prefix}key:${deviceId}`);
    return hex === null ? undefined : Buffer.from(hex, 'hex');
  }

  async close(): Promise<void> {
    await this.redis.quit().catch(() => this.redis.disconnect());
  }

  private async ownerChange(deviceId: string, principal: string, action: 'rotate' | 'revoke' | 'unbind'): Promise<boolean> {
    return (await this.redis.activationOwnerChange(this.bindingKey(deviceId), principal, action, this.secretPrefix())) === 1;
  }

  private codeKey(code: string): string {
    return `${this.prefix}code:${code}`;
  }

  private deviceKey(deviceId: string, clientId: string): string {
    return `${this.prefix}device:${deviceKey(deviceId, clientId)}`;
  }

  private bindingKey(deviceId: string): string {
    return `${this.prefix}bound:${deviceId}`;
  }

  private secretPrefix(): string {
    return `${this.prefix}secret:`;
  }
}
