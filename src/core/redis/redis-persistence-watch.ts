import { Logger, OnApplicationShutdown } from '@nestjs/common';
import type Redis from 'ioredis';
import { redactUrl } from '../logging/redact';
import type { SharedRedis } from '../state/shared-redis';
import { COMMAND_TIMEOUT_MS } from './redis-connection';
import { readRedisPersistence, RedisPersistence } from './redis-persistence';

/** DI token of the app's {@link RedisPersistenceWatch}, when it has a Redis. */
export const REDIS_PERSISTENCE = Symbol('REDIS_PERSISTENCE');

/** How often persistence is read again besides each reconnection: an operator can turn it off with `CONFIG SET`. */
export const PERSISTENCE_CHECK_EVERY_MS = 5 * 60_000;

/**
 * Watches whether the Redis the gateway keeps its state in keeps it across a restart: reminders
 * and held pushes live there alone (BullMQ's delayed jobs, the fleet's keys), so a Redis without
 * persistence loses every pending one when it restarts. Read at start (a warning when there is
 * none), again whenever the connection comes back (a restarted or failed-over Redis may be
 * configured otherwise) and every {@link PERSISTENCE_CHECK_EVERY_MS}; a change is logged, and
 * `gateway_redis_persistent` reads {@link persistent}. A Redis that will not say is not warned
 * about.
 */
export class RedisPersistenceWatch implements OnApplicationShutdown {
  private readonly logger = new Logger('Redis');
  private last: RedisPersistence | undefined;
  private readonly timer: NodeJS.Timeout;

  private constructor(
    private readonly redis: Pick<Redis, 'config' | 'info' | 'on' | 'quit' | 'disconnect'>,
    private readonly name: string,
    everyMs: number,
  ) {
    this.timer = setInterval(() => void this.check(), everyMs).unref();
    redis.on('ready', () => void this.check());
  }

  /** Connects to the shared Redis (or fails with `RedisUnavailableError`) and reads its persistence once before it resolves. */
  static async connect(shared: SharedRedis, everyMs = PERSISTENCE_CHECK_EVERY_MS): Promise<RedisPersistenceWatch> {
    const [redis] = await shared.connect(1);
    // A frozen Redis must not hold a check (nor the start) for ever.
    redis.options.commandTimeout = COMMAND_TIMEOUT_MS;
    return RedisPersistenceWatch.over(redis, shared.url, everyMs);
  }

  /** A watch over a connection of the caller's (made by `connectRedis`), closed with the watch. */
  static async over(redis: RedisPersistenceWatch['redis'], url: string, everyMs = PERSISTENCE_CHECK_EVERY_MS): Promise<RedisPersistenceWatch> {
    const watch = new RedisPersistenceWatch(redis, redactUrl(url), everyMs);
    await watch.check();
    return watch;
  }

  /** Whether a restart of Redis keeps what it holds; undefined when Redis would not say (or has not answered yet). */
  get persistent(): boolean | undefined {
    return this.last?.persistent;
  }

  /** Reads persistence and logs what changed; a Redis that does not answer now keeps its last answer. */
  async check(): Promise<void> {
    let now: RedisPersistence;
    try {
      now = await readRedisPersistence(this.redis);
    } catch {
      return;
    }
    const before = this.last;
    this.last = now;
    if (before !== undefined && before.persistent === now.persistent) return;
    if (now.persistent === false) {
      this.logger.warn(
        `Redis at ${this.name} has no persistence (${now.detail}): a restart of it loses every pending reminder, held push, ` +
          'session, MCP session and task. Turn on its append-only file (appendonly yes), as docker-compose.yml does ' +
          '("What survives what" in docs/guides/deploying.md)',
      );
    } else if (now.persistent === true) {
      this.logger.log(`Redis at ${this.name} persists what it holds (${now.detail})`);
    } else {
      this.logger.log(`Redis at ${this.name} does not say whether it persists what it holds (${now.detail}); make sure it does`);
    }
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}
