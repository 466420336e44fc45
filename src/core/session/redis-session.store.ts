import { Logger, OnApplicationShutdown } from '@nestjs/common';
import { randomUUID } from 'crypto';
import Redis, { RedisOptions } from 'ioredis';
import { StartupError } from '../errors/startup-error';
import type { HistoryMessage, Session, SessionSettings } from './session';
import type { SessionStore } from './session-store';

/** How long a Redis command may take before the request fails with SESSION_ERROR. */
const COMMAND_TIMEOUT_MS = 2000;

/** How long the boot waits for Redis before it gives up with a clear error. */
const CONNECT_TIMEOUT_MS = 5000;

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

/** Thrown at boot when Redis cannot be reached; the message names the URL (without its password). */
export class RedisUnavailableError extends StartupError {
  constructor(url: string, cause: string) {
    super(`Cannot reach Redis at ${redactPassword(url)} (REDIS_URL): ${cause}`);
  }
}

function redactPassword(url: string): string {
  return url.replace(/\/\/([^@/]*)@/, '//***@');
}

/**
 * Sessions in Redis (`REDIS_URL`), shared by every instance and kept across restarts. A session
 * is three keys under one hash tag (so a Redis Cluster keeps them in one slot): a `meta` hash
 * (owner, timestamps), a `settings` hash (one field per setting, JSON values, so changing one
 * setting never overwrites another) and a `history` list, all expiring together after the
 * session timeout.
 *
 * Commands fail fast rather than queue while Redis is away (no offline queue, a command
 * timeout), so requests answer SESSION_ERROR at once; the client keeps reconnecting in the
 * background and service resumes by itself. Announcements of which instance holds a session
 * travel on a pub/sub channel, over a second connection as Redis requires.
 */
export class RedisSessionStore implements SessionStore, OnApplicationShutdown {
  private readonly logger = new Logger('RedisSessions');
  private readonly instanceId = randomUUID();
  private readonly channel: string;
  private readonly listeners: ((sessionId: string) => void)[] = [];

  private constructor(
    private readonly redis: ScriptedRedis,
    private readonly subscriber: Redis,
    private readonly prefix: string,
    private readonly ttlMs: number,
  ) {
    this.channel = `${prefix}session-attached`;
  }

  /** Connects both connections, or fails with {@link RedisUnavailableError}. */
  static async connect(url: string, prefix: string, ttlMs: number): Promise<RedisSessionStore> {
    const options: RedisOptions = {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      connectTimeout: CONNECT_TIMEOUT_MS,
      // At boot a failure is final; once connected, the connection is retried for ever (see below).
      retryStrategy: () => null,
    };
    const redis = new Redis(url, options) as ScriptedRedis;
    const subscriber = new Redis(url, options);
    for (const [name, script] of Object.entries(SCRIPTS)) {
      redis.defineCommand(name, { numberOfKeys: script.numberOfKeys, lua: script.lua });
    }
    // ioredis reports why a connection failed as an 'error' event and rejects connect() vaguely.
    let cause: string | undefined;
    const remember = (error: Error) => (cause ??= error.message);
    redis.on('error', remember);
    subscriber.on('error', remember);
    try {
      await Promise.all([redis.connect(), subscriber.connect()]);
      await redis.ping();
    } catch (error) {
      // A client whose connection already ended must not be disconnected again: ioredis would arm a timer.
      for (const client of [redis, subscriber]) if (client.status !== 'end') client.disconnect();
      throw new RedisUnavailableError(url, cause ?? (error as Error).message);
    } finally {
      redis.off('error', remember);
      subscriber.off('error', remember);
    }
    // Armed only once connected, so nothing of a failed boot outlives it.
    for (const client of [redis, subscriber]) client.options.retryStrategy = (attempt) => Math.min(100 * 2 ** attempt, 5000);
    redis.options.commandTimeout = COMMAND_TIMEOUT_MS;
    const store = new RedisSessionStore(redis, subscriber, prefix, ttlMs);
    await store.listen();
    return store;
  }

  async create(session: Session): Promise<void> {
    const { id, owner, createdAt, lastActiveAt, settings, history } = session;
    const meta = { owner, createdAt: String(createdAt), lastActiveAt: String(lastActiveAt) };
    const created = await this.redis.createSession(...this.keys(id), this.ttlMs, JSON.stringify(meta), JSON.stringify(encodeSettings(settings)));
    if (created !== 1) throw new Error(`Session ${id} already exists`);
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

  async appendHistory(id: string, messages: HistoryMessage[], limit: number): Promise<void> {
    await this.redis.appendSessionHistory(...this.keys(id), this.ttlMs, Date.now(), limit, ...messages.map((m) => JSON.stringify(m)));
  }

  async touch(id: string): Promise<void> {
    await this.redis.touchSession(...this.keys(id), this.ttlMs, Date.now());
  }

  async delete(id: string): Promise<boolean> {
    return (await this.redis.del(...this.keys(id))) > 0;
  }

  /** Redis expires sessions itself. */
  async sweep(): Promise<number> {
    return 0;
  }

  async announceAttach(sessionId: string): Promise<void> {
    await this.redis.publish(this.channel, JSON.stringify({ sessionId, instanceId: this.instanceId }));
  }

  onAttachedElsewhere(listener: (sessionId: string) => void): void {
    this.listeners.push(listener);
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.allSettled([this.redis.quit(), this.subscriber.quit()]);
  }

  /** Whether commands can be sent right now (for /health). */
  get ready(): boolean {
    return this.redis.status === 'ready';
  }

  private async listen(): Promise<void> {
    let lost = false;
    this.redis.on('error', (error: Error) => {
      if (!lost) this.logger.error(`Redis connection lost: ${error.message}; reconnecting`);
      lost = true;
    });
    this.redis.on('ready', () => {
      if (lost) this.logger.log('Redis connection restored');
      lost = false;
    });
    this.subscriber.on('error', () => undefined);
    this.subscriber.on('message', (_channel: string, text: string) => {
      try {
        const { sessionId, instanceId } = JSON.parse(text) as { sessionId: string; instanceId: string };
        if (instanceId !== this.instanceId) this.listeners.forEach((listener) => listener(sessionId));
      } catch {
        this.logger.warn(`Ignored a malformed announcement on ${this.channel}`);
      }
    });
    await this.subscriber.subscribe(this.channel);
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
