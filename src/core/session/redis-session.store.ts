import { Logger, OnApplicationShutdown } from '@nestjs/common';
import type Redis from 'ioredis';
import { COMMAND_TIMEOUT_MS, connectRedis } from './redis-connection';
import type { HistoryMessage, Session, SessionSettings } from './session';
import type { SessionStore } from './session-store';

/**
 * Every write below is one Lua script: it checks that the session still exists (so a write
 * never resurrects an expired session as a fragment), changes it, stamps `lastActiveAt` and
 * restarts the TTL of the session's keys, atomically. KEYS: meta, settings, history.
 */
const SCRIPTS = {
  createSession: {
    numberOfKeys: 3,
    // ARGV: ttl ms, meta JSON, settings JSON
    lua: `
      if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
      for field, value in pairs(cjson.decode(ARGV[2])) do redis.call('HSET', KEYS[1], field, value) end
      for field, value in pairs(cjson.decode(ARGV[3])) do redis.call('HSET', KEYS[2], field, value) end
      for i = 1, 3 do redis.call('PEXPIRE', KEYS[i], ARGV[1]) end
      return 1`,
  },
  updateSessionSettings: {
    numberOfKeys: 3,
    // ARGV: ttl ms, now, patch JSON (a JSON-encoded value per field; false clears the field)
    lua: `
      if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
      for field, value in pairs(cjson.decode(ARGV[3])) do
        if value == false then redis.call('HDEL', KEYS[2], field) else redis.call('HSET', KEYS[2], field, value) end
      end
      redis.call('HSET', KEYS[1], 'lastActiveAt', ARGV[2])
      for i = 1, 3 do redis.call('PEXPIRE', KEYS[i], ARGV[1]) end
      return 1`,
  },
  appendSessionHistory: {
    numberOfKeys: 3,
    // ARGV: ttl ms, now, limit, message JSON...
    lua: `
      if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
      local limit = tonumber(ARGV[3])
      if limit == 0 then
        redis.call('DEL', KEYS[3])
      else
        for i = 4, #ARGV do redis.call('RPUSH', KEYS[3], ARGV[i]) end
        redis.call('LTRIM', KEYS[3], -limit, -1)
      end
      redis.call('HSET', KEYS[1], 'lastActiveAt', ARGV[2])
      for i = 1, 3 do redis.call('PEXPIRE', KEYS[i], ARGV[1]) end
      return 1`,
  },
  touchSession: {
    numberOfKeys: 3,
    // ARGV: ttl ms, now
    lua: `
      if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
      redis.call('HSET', KEYS[1], 'lastActiveAt', ARGV[2])
      for i = 1, 3 do redis.call('PEXPIRE', KEYS[i], ARGV[1]) end
      return 1`,
  },
} as const;

type ScriptedRedis = Redis & Record<keyof typeof SCRIPTS, (...args: (string | number)[]) => Promise<number>>;

/**
 * Sessions in Redis (`REDIS_URL`), shared by every instance and kept across restarts. A session
 * is three keys under one hash tag (so a Redis Cluster keeps them in one slot): a `meta` hash
 * (owner, timestamps), a `settings` hash (one field per setting, JSON values, so changing one
 * setting never overwrites another) and a `history` list, all expiring together after the
 * session timeout.
 *
 * Commands fail fast rather than queue while Redis is away (no offline queue, a command
 * timeout), so requests answer SESSION_ERROR at once; the client keeps reconnecting in the
 * background and service resumes by itself.
 */
export class RedisSessionStore implements SessionStore, OnApplicationShutdown {
  private readonly logger = new Logger('RedisSessions');

  private constructor(
    private readonly redis: ScriptedRedis,
    private readonly prefix: string,
    private readonly ttlMs: number,
  ) {}

  /** Connects, or fails with `RedisUnavailableError`. */
  static async connect(url: string, prefix: string, ttlMs: number): Promise<RedisSessionStore> {
    const [redis] = (await connectRedis(url, 1, (client) => {
      for (const [name, script] of Object.entries(SCRIPTS)) client.defineCommand(name, { numberOfKeys: script.numberOfKeys, lua: script.lua });
    })) as ScriptedRedis[];
    redis.options.commandTimeout = COMMAND_TIMEOUT_MS;
    const store = new RedisSessionStore(redis, prefix, ttlMs);
    store.watch();
    return store;
  }

  async create(session: Session): Promise<void> {
    const { id, owner, createdAt, lastActiveAt, settings, history } = session;
    const meta = { owner, createdAt: String(createdAt), lastActiveAt: String(lastActiveAt) };
    const created = await this.redis.createSession(...this.keys(id), this.ttlMs, JSON.stringify(meta), JSON.stringify(encodeSettings(settings)));
    if (created !== 1) throw new Error(`Session ${id} already exists`);
    const index = this.ownerKey(owner);
    await this.redis.multi().zadd(index, createdAt, id).pexpire(index, this.ttlMs).exec();
    if (history.length > 0) await this.appendHistory(id, history, history.length);
  }

  async get(id: string): Promise<Session | undefined> {
    const [meta, settings, history] = this.keys(id);
    const replies = await this.redis.multi().hgetall(meta).hgetall(settings).lrange(history, 0, -1).exec();
    if (!replies) throw new Error('Redis transaction aborted');
    const [[metaError, metaValue], [settingsError, settingsValue], [historyError, historyValue]] = replies;
    const failure = metaError ?? settingsError ?? historyError;
    if (failure) throw failure;
    const fields = metaValue as Record<string, string>;
    if (!fields.owner) return undefined;
    return {
      id,
      owner: fields.owner,
      createdAt: Number(fields.createdAt),
      lastActiveAt: Number(fields.lastActiveAt),
      settings: decodeSettings(settingsValue as Record<string, string>),
      history: (historyValue as string[]).map((message) => JSON.parse(message) as HistoryMessage),
    };
  }

  async updateSettings(id: string, settings: Partial<SessionSettings>): Promise<boolean> {
    const patch = Object.fromEntries(
      Object.entries(settings).map(([key, value]) => [key, value === undefined ? false : JSON.stringify(value)]),
    );
    return (await this.redis.updateSessionSettings(...this.keys(id), this.ttlMs, Date.now(), JSON.stringify(patch))) === 1;
  }

  async appendHistory(id: string, messages: readonly HistoryMessage[], limit: number): Promise<void> {
    await this.redis.appendSessionHistory(...this.keys(id), this.ttlMs, Date.now(), limit, ...messages.map((m) => JSON.stringify(m)));
  }

  async touch(id: string): Promise<void> {
    await this.redis.touchSession(...this.keys(id), this.ttlMs, Date.now());
  }

  async delete(id: string): Promise<boolean> {
    return (await this.redis.del(...this.keys(id))) > 0;
  }

  /**
   * The owner's index (a sorted set of session ids, expiring with the newest) may still name
   * sessions Redis has expired: they are dropped from it here, before anything live is removed.
   */
  async trimOwner(owner: string, keep: number): Promise<number> {
    const index = this.ownerKey(owner);
    if ((await this.redis.zcard(index)) <= keep) return 0;
    const ids = await this.redis.zrange(index, 0, -1);
    const reads = await ids.reduce((pipeline, id) => pipeline.hget(this.keys(id)[0], 'lastActiveAt'), this.redis.pipeline()).exec();
    const live: { id: string; lastActiveAt: number }[] = [];
    const gone: string[] = [];
    ids.forEach((id, at) => {
      const [error, value] = reads?.[at] ?? [new Error('no reply')];
      if (error) throw error;
      if (value === null) gone.push(id);
      else live.push({ id, lastActiveAt: Number(value) });
    });
    const excess = live.sort((a, b) => a.lastActiveAt - b.lastActiveAt).slice(0, Math.max(0, live.length - keep)).map(({ id }) => id);
    const removed = [...gone, ...excess];
    if (removed.length === 0) return 0;
    const transaction = this.redis.multi().zrem(index, ...removed);
    if (excess.length > 0) transaction.del(...excess.flatMap((id) => this.keys(id)));
    await transaction.exec();
    return excess.length;
  }

  /** Redis expires sessions itself. */
  async sweep(): Promise<number> {
    return 0;
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.allSettled([this.redis.quit()]);
  }

  /** Whether commands can be sent right now (for /health). */
  get ready(): boolean {
    return this.redis.status === 'ready';
  }

  /** Logs a lost connection once, and its return. */
  private watch(): void {
    let lost = false;
    this.redis.on('error', (error: Error) => {
      if (!lost) this.logger.error(`Redis connection lost: ${error.message}; reconnecting`);
      lost = true;
    });
    this.redis.on('ready', () => {
      if (lost) this.logger.log('Redis connection restored');
      lost = false;
    });
  }

  private ownerKey(owner: string): string {
    return `${this.prefix}sessions-of:${owner}`;
  }

  private keys(id: string): [meta: string, settings: string, history: string] {
    const base = `${this.prefix}session:{${id}}`;
    return [base, `${base}:settings`, `${base}:history`];
  }
}

function encodeSettings(settings: SessionSettings): Record<string, string> {
  return Object.fromEntries(
    Object.entries(settings)
      .filter(([, value]) => value !== undefined)
      .map(([key, value]) => [key, JSON.stringify(value)]),
  );
}

function decodeSettings(fields: Record<string, string>): SessionSettings {
  return Object.fromEntries(Object.entries(fields).map(([key, value]) => [key, JSON.parse(value)])) as unknown as SessionSettings;
}
