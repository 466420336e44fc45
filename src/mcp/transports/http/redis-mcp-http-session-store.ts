import { OnApplicationShutdown } from '@nestjs/common';
import { createHash } from 'crypto';
import type Redis from 'ioredis';
import { COMMAND_TIMEOUT_MS } from '../../../core/redis/redis-connection';
import type { McpHttpSessionRecord, McpHttpSessionStore } from './mcp-http-session-store';
import type { SharedRedis } from '../../../core/state/shared-redis';

/**
 * Each script works on one principal's keys (KEYS: the session's hash, the principal's sorted
 * set of sessions scored by expiry time) and first drops that set's expired members, so a
 * session that expired (its hash gone by TTL) frees its place without anyone removing it.
 */
const SCRIPTS = {
  addMcpHttpSession: {
    // ARGV: ttl ms, now, expires at, limit (0: none), session id, record JSON
    lua: `
      redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[2])
      local limit = tonumber(ARGV[4])
      if limit > 0 and redis.call('ZCARD', KEYS[2]) >= limit then return 0 end
      redis.call('HSET', KEYS[1], 'record', ARGV[6], 'lastUsedAt', ARGV[2])
      redis.call('PEXPIRE', KEYS[1], ARGV[1])
      redis.call('ZADD', KEYS[2], ARGV[3], ARGV[5])
      redis.call('PEXPIRE', KEYS[2], ARGV[1])
      return 1`,
  },
  touchMcpHttpSession: {
    // ARGV: ttl ms, now, expires at, session id. Returns the record JSON, or nil when the session has ended.
    lua: `
      redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[2])
      if redis.call('EXISTS', KEYS[1]) == 0 then
        redis.call('ZREM', KEYS[2], ARGV[4])
        return false
      end
      redis.call('HSET', KEYS[1], 'lastUsedAt', ARGV[2])
      redis.call('PEXPIRE', KEYS[1], ARGV[1])
      redis.call('ZADD', KEYS[2], ARGV[3], ARGV[4])
      redis.call('PEXPIRE', KEYS[2], ARGV[1])
      return redis.call('HGET', KEYS[1], 'record')`,
  },
} as const;

type ScriptedRedis = Redis & Record<keyof typeof SCRIPTS, (...args: (string | number)[]) => Promise<unknown>>;

/**
 * MCP Streamable HTTP session records in Redis, so a session started on one instance is served
 * by any other (`McpHttpSessions` rebuilds it there from the record). Per session, a hash
 * `<prefix>mcp-http:{<principal digest>}:session:<id>` (the record, `lastUsedAt`); per principal,
 * a sorted set `…:sessions` of its session ids scored by expiry time, which counts its sessions
 * across instances. Both expire after `CLOUD_SESSION_TIMEOUT` unused and are refreshed on every
 * use. The principal's digest is the hash tag, so a Redis Cluster keeps a principal's keys in one
 * slot, and a session looked up by another principal is simply not found.
 */
export class RedisMcpHttpSessionStore implements McpHttpSessionStore, OnApplicationShutdown {
  readonly shared = true;

  private constructor(
    private readonly redis: ScriptedRedis,
    private readonly prefix: string,
    private readonly ttlMs: number,
  ) {}

  /** Connects, or fails with `RedisUnavailableError`. */
  static async connect(shared: SharedRedis, ttlMs: number): Promise<RedisMcpHttpSessionStore> {
    const [redis] = (await shared.connect(1, (client) => {
      for (const [name, script] of Object.entries(SCRIPTS)) client.defineCommand(name, { numberOfKeys: 2, lua: script.lua });
    })) as ScriptedRedis[];
    redis.options.commandTimeout = COMMAND_TIMEOUT_MS;
    // Failures reach each caller as a rejected command; the session store logs the connection's state.
    redis.on('error', () => undefined);
    return new RedisMcpHttpSessionStore(redis, shared.keyPrefix, ttlMs);
  }

  async add(record: McpHttpSessionRecord, perPrincipalLimit: number): Promise<boolean> {
    const now = Date.now();
    const { sessionId, principal } = record;
    const added = await this.redis.addMcpHttpSession(
      ...this.keys(sessionId, principal),
      this.ttlMs,
      now,
      now + this.ttlMs,
      perPrincipalLimit,
      sessionId,
      JSON.stringify({ ...record, lastUsedAt: undefined }),
    );
    return added === 1;
  }

  async claim(sessionId: string, principal: string): Promise<McpHttpSessionRecord | undefined> {
    const now = Date.now();
    const text = (await this.redis.touchMcpHttpSession(...this.keys(sessionId, principal), this.ttlMs, now, now + this.ttlMs, sessionId)) as string | null;
    if (text === null) return undefined;
    const record = JSON.parse(text) as McpHttpSessionRecord;
    return record.sessionId === sessionId && record.principal === principal ? { ...record, lastUsedAt: now } : undefined;
  }

  async touch(sessionId: string, principal: string): Promise<boolean> {
    return (await this.claim(sessionId, principal)) !== undefined;
  }

  async remove(sessionId: string, principal: string): Promise<void> {
    const [session, sessions] = this.keys(sessionId, principal);
    const replies = await this.redis.multi().del(session).zrem(sessions, sessionId).exec();
    const failure = replies?.find(([error]) => error)?.[0];
    if (failure) throw failure;
  }

  /** The record stays for the other instances; Redis expires it. */
  released(): void {}

  async onApplicationShutdown(): Promise<void> {
    await this.redis.quit().catch(() => undefined);
  }

  private keys(sessionId: string, principal: string): [session: string, sessions: string] {
    const base = `${this.prefix}mcp-http:{${createHash('sha256').update(principal).digest('hex').slice(0, 16)}}`;
    return [`${base}:session:${sessionId}`, `${base}:sessions`];
  }
}
