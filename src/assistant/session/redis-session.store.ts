import { OnApplicationShutdown } from '@nestjs/common';
import type Redis from 'ioredis';
import { RedisClock } from './redis-clock';
import { COMMAND_TIMEOUT_MS } from '../../core/redis/redis-connection';
import type { SharedRedis } from '../../core/state/shared-redis';
import { RedisProbe } from './redis-probe';
import type { HistoryMessage, Session, SessionSettings } from './session';
import type { SessionRef, SessionStore, SessionStoreProbe } from './session-store';

/**
 * How long after it is sent a write may still apply. A caller gives up on a command after
 * {@link COMMAND_TIMEOUT_MS}; the rest is left for the answer to travel back, so a write either
 * lands while its caller still waits for it or never.
 */
const WRITE_WINDOW_MS = COMMAND_TIMEOUT_MS - 500;

/** What a script answers when Redis ran it past its deadline, and so did nothing. */
const TOO_LATE = -1;

/** ARGV[1] of every script: the deadline, in Redis's `TIME` milliseconds, past which it does nothing. */
const LATE = `
  local time = redis.call('TIME')
  if tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000) > tonumber(ARGV[1]) then return ${TOO_LATE} end`;

/**
 * The writes to one existing session. KEYS: meta, settings, history, the owner's index;
 * ARGV: deadline, ttl ms, now, session id, owner, then the write's own. A session that is gone
 * (or not the owner's) is left alone, so a write never resurrects an expired session as a
 * fragment; otherwise the write stamps `lastActiveAt`, moves the session's score in its owner's
 * index to it, and restarts the TTL of the session's keys and of the index.
 */
const OWN_SESSION = `${LATE}
  if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[5] then return 0 end`;
const MARK_ACTIVE = `
  redis.call('HSET', KEYS[1], 'lastActiveAt', ARGV[3])
  for i = 1, 3 do redis.call('PEXPIRE', KEYS[i], ARGV[2]) end
  redis.call('ZADD', KEYS[4], ARGV[3], ARGV[4])
  redis.call('PEXPIRE', KEYS[4], ARGV[2])
  return 1`;

/** Every write is one Lua script, atomic; each refuses to run past its deadline. KEYS: meta, settings, history, the owner's index. */
const SCRIPTS = {
  createSession: `${LATE}
    -- ARGV: deadline, ttl ms, lastActiveAt, session id, meta JSON, settings JSON
    if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
    for field, value in pairs(cjson.decode(ARGV[5])) do redis.call('HSET', KEYS[1], field, value) end
    for field, value in pairs(cjson.decode(ARGV[6])) do redis.call('HSET', KEYS[2], field, value) end
    ${MARK_ACTIVE}`,
  updateSessionSettings: `${OWN_SESSION}
    -- ARGV[6]: patch JSON (a JSON-encoded value per field; false clears the field)
    for field, value in pairs(cjson.decode(ARGV[6])) do
      if value == false then redis.call('HDEL', KEYS[2], field) else redis.call('HSET', KEYS[2], field, value) end
    end
    ${MARK_ACTIVE}`,
  appendSessionHistory: `${OWN_SESSION}
    -- ARGV[6]: limit; ARGV[7...]: message JSON
    local limit = tonumber(ARGV[6])
    if limit == 0 then
      redis.call('DEL', KEYS[3])
    else
      for i = 7, #ARGV do redis.call('RPUSH', KEYS[3], ARGV[i]) end
      redis.call('LTRIM', KEYS[3], -limit, -1)
    end
    ${MARK_ACTIVE}`,
  touchSession: `${OWN_SESSION}
    ${MARK_ACTIVE}`,
  deleteSession: `${OWN_SESSION}
    redis.call('ZREM', KEYS[4], ARGV[4])
    return redis.call('DEL', KEYS[1], KEYS[2], KEYS[3]) > 0 and 1 or 0`,
  /**
   * Forgets one session picked as its owner's least recently active, unless it became active
   * since it was picked (its score moved past the one seen). ARGV: deadline, session id, score
   * seen. 1 when a live session was removed; 0 when it was gone already, or kept.
   */
  forgetIdleSession: `${LATE}
    local score = redis.call('ZSCORE', KEYS[4], ARGV[2])
    if not score or tonumber(score) > tonumber(ARGV[3]) then return 0 end
    redis.call('ZREM', KEYS[4], ARGV[2])
    return redis.call('DEL', KEYS[1], KEYS[2], KEYS[3]) > 0 and 1 or 0`,
} as const;

type ScriptName = keyof typeof SCRIPTS;
type ScriptedRedis = Redis & Record<ScriptName, (...args: (string | number)[]) => Promise<number>>;
type SessionKeys = [meta: string, settings: string, history: string, ownerIndex: string];

/**
 * Sessions in Redis (`REDIS_URL`), shared by every instance and kept across restarts. A session
 * is three keys under one hash tag: a `meta` hash (owner, timestamps), a `settings` hash (one
 * field per setting, JSON values, so changing one setting never overwrites another) and a
 * `history` list, all expiring together after the session timeout. Each owner has an index, a
 * sorted set of its session ids scored by their `lastActiveAt`, which every write moves in the
 * same script; the owner's least recently active sessions are its lowest scores.
 *
 * Commands fail fast rather than queue while Redis is away (no offline queue, a command
 * timeout), so requests answer SESSION_ERROR at once; the client keeps reconnecting in the
 * background and service resumes by itself. A command that timed out is still on its way to
 * Redis, and a frozen Redis runs it when it wakes: every write carries a deadline, checked by
 * Redis against its own clock, so a write its caller was told failed never lands later.
 */
export class RedisSessionStore implements SessionStore, OnApplicationShutdown {
  private readonly responsiveness: RedisProbe;

  private constructor(
    private readonly redis: ScriptedRedis,
    private readonly clock: RedisClock,
    private readonly prefix: string,
    private readonly ttlMs: number,
  ) {
    this.responsiveness = new RedisProbe(redis, clock);
  }

  /** Connects, or fails with `RedisUnavailableError`. */
  static async connect(shared: SharedRedis, ttlMs: number): Promise<RedisSessionStore> {
    const [redis] = (await shared.connect(1, (client) => {
      for (const [name, lua] of Object.entries(SCRIPTS)) client.defineCommand(name, { numberOfKeys: 4, lua });
    })) as ScriptedRedis[];
    redis.options.commandTimeout = COMMAND_TIMEOUT_MS;
    const clock = new RedisClock();
    await clock.sync(redis);
    const store = new RedisSessionStore(redis, clock, shared.keyPrefix, ttlMs);
    store.watch();
    return store;
  }

  async create(session: Session): Promise<void> {
    const { id, owner, createdAt, lastActiveAt, settings, history } = session;
    const meta = { owner, createdAt: String(createdAt), lastActiveAt: String(lastActiveAt) };
    const created = await this.write(
      'createSession',
      this.keys(session),
      this.ttlMs,
      lastActiveAt,
      id,
      JSON.stringify(meta),
      JSON.stringify(encodeSettings(settings)),
    );
    if (created !== 1) throw new Error(`Session ${id} already exists`);
    if (history.length > 0) await this.appendHistory(session, history, history.length);
  }

  async get(id: string): Promise<Session | undefined> {
    const [meta, settings, history] = this.sessionKeys(id);
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

  async updateSettings(session: SessionRef, settings: Partial<SessionSettings>): Promise<boolean> {
    const patch = Object.fromEntries(Object.entries(settings).map(([key, value]) => [key, value === undefined ? false : JSON.stringify(value)]));
    return (await this.writeToSession('updateSessionSettings', session, JSON.stringify(patch))) === 1;
  }

  async appendHistory(session: SessionRef, messages: readonly HistoryMessage[], limit: number): Promise<boolean> {
    return (await this.writeToSession('appendSessionHistory', session, limit, ...messages.map((m) => JSON.stringify(m)))) === 1;
  }

  async touch(session: SessionRef): Promise<void> {
    await this.writeToSession('touchSession', session);
  }

  async delete(session: SessionRef): Promise<boolean> {
    return (await this.writeToSession('deleteSession', session)) === 1;
  }

  /**
   * The owner's lowest scores past its newest `keep` are its least recently active sessions
   * (those Redis has expired lowest of all, being idle longest): one range read, then one script
   * per session to forget, which keeps a session that became active meanwhile.
   */
  async trimOwner(owner: string, keep: number): Promise<number> {
    const picked = await this.redis.zrange(this.ownerKey(owner), 0, -(keep + 1), 'WITHSCORES');
    const forgotten = await Promise.all(pairs(picked).map(([id, score]) => this.write('forgetIdleSession', this.keys({ id, owner }), id, score)));
    return forgotten.filter((removed) => removed === 1).length;
  }

  /** Redis expires sessions itself. */
  async sweep(): Promise<number> {
    return 0;
  }

  probe(): Promise<SessionStoreProbe> {
    return this.responsiveness.check();
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.allSettled([this.redis.quit()]);
  }

  /** Whether commands can be sent right now and the last probe, if any, was answered (for /health). */
  get ready(): boolean {
    return this.redis.status === 'ready' && this.responsiveness.answered !== false;
  }

  /** A write to an existing session of the owner's: ARGV as {@link OWN_SESSION} lays it out. */
  private writeToSession(script: ScriptName, session: SessionRef, ...args: (string | number)[]): Promise<number> {
    return this.write(script, this.keys(session), this.ttlMs, Date.now(), session.id, session.owner, ...args);
  }

  /**
   * Runs a write script with its deadline. Refused as too late while answered before the
   * command timed out means the estimate of Redis's clock is off (its clock was set): it is
   * read again and the write, which did nothing, sent once more.
   */
  private async write(script: ScriptName, keys: SessionKeys, ...args: (string | number)[]): Promise<number> {
    const attempt = () => this.redis[script](...keys, this.clock.deadline(WRITE_WINDOW_MS), ...args);
    const reply = await attempt();
    if (reply !== TOO_LATE) return reply;
    await this.clock.sync(this.redis);
    const retried = await attempt();
    if (retried === TOO_LATE) throw new Error('Redis ran the write past its deadline');
    return retried;
  }

  /** The estimate of Redis's clock is read again whenever the connection comes back (a restarted Redis may have another). Losses are logged by `connectRedis`. */
  private watch(): void {
    this.redis.on('ready', () => this.clock.sync(this.redis).catch(() => undefined));
  }

  private ownerKey(owner: string): string {
    return `${this.prefix}sessions-of:${owner}`;
  }

  private sessionKeys(id: string): [meta: string, settings: string, history: string] {
    const base = `${this.prefix}session:{${id}}`;
    return [base, `${base}:settings`, `${base}:history`];
  }

  private keys({ id, owner }: SessionRef): SessionKeys {
    return [...this.sessionKeys(id), this.ownerKey(owner)];
  }
}

/** `[member, score, member, score...]` as pairs. */
function pairs(flat: string[]): [string, string][] {
  return Array.from({ length: flat.length / 2 }, (_, at) => [flat[2 * at], flat[2 * at + 1]]);
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
