import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import { GATEWAY_CONFIG, GatewayConfig } from '../../config/gateway-config';
import { redactUrl } from '../logging/redact';
import { RedisConnections, SharedRedis } from './shared-redis';

/** The two ways of a store: the instance's own memory, or the Redis instances share. */
export interface StoreChoices<T> {
  memory: () => T;
  redis: (redis: SharedRedis) => T;
}

/**
 * Where the gateway keeps what its instances share (sessions, the fleet, reminders, MCP's
 * sessions, tasks and waiting calls, rate limits): decided once, here, by `REDIS_URL`. Every
 * module asks {@link choose} for its store, giving both kinds; no module reads the setting or
 * opens a Redis connection itself (`src/layers.spec.ts` checks it). The connections it hands
 * out are ended with the app.
 */
@Injectable()
export class GatewayState implements OnApplicationShutdown {
  /** The shared Redis; `undefined` when everything lives in this instance's memory. */
  readonly redis?: RedisConnections;

  constructor(@Inject(GATEWAY_CONFIG) config: GatewayConfig) {
    const { redisUrl, redisKeyPrefix } = config.session;
    if (redisUrl) this.redis = new RedisConnections(redisUrl, redisKeyPrefix);
  }

  /** Whether instances share their state through Redis. */
  get shared(): boolean {
    return this.redis !== undefined;
  }

  /** The store that fits: `redis(...)` when instances share Redis, `memory()` otherwise. */
  choose<T>(choices: StoreChoices<T>): T {
    return this.redis ? choices.redis(this.redis) : choices.memory();
  }

  /** Where the state lives, for the startup summary (the URL without its password). */
  describe(): string {
    return this.redis ? `in Redis at ${redactUrl(this.redis.url)} (prefix ${this.redis.keyPrefix})` : 'in memory (this instance only)';
  }

  onApplicationShutdown(): void {
    this.redis?.closeAll();
  }
}
