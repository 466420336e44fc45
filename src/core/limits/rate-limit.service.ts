import { Inject, Injectable, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { GATEWAY_CONFIG, GatewayConfig } from '../../config/gateway-config';
import { AccessTokenService } from '../auth/access-token.service';
import type { Grant } from '../auth/grant';
import { MaybePromise, thenMaybe } from '../maybe-promise';
import { MemoryRateLimiter } from './memory-rate-limiter';
import { RateLimitedError } from './rate-limited.error';
import type { RateDecision, RateLimiter } from './rate-limiter';
import { RedisRateLimiter } from './redis-rate-limiter';
import { GatewayState } from '../state/gateway-state';

/**
 * The tokens file's rate limits, per named token: `turns_per_minute` (LLM-gateway turns) and
 * `tool_calls_per_minute` (tool calls by MCP, LiteMCP and UTCP clients). Counted in memory, or
 * in Redis with `REDIS_URL` so that a limit holds across instances. A token without a limit
 * costs nothing: no counter is touched and the answer is immediate.
 */
@Injectable()
export class RateLimitService implements OnModuleInit, OnApplicationShutdown {
  private limiter: RateLimiter = new MemoryRateLimiter();
  private readonly windowMs: number;

  constructor(
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
    private readonly tokens: AccessTokenService,
    private readonly state: GatewayState,
  ) {
    this.windowMs = config.auth.rateLimitWindowMs;
  }

  async onModuleInit(): Promise<void> {
    // Only a tokens file sets limits: without one there is nothing to count, anywhere.
    if (this.config.auth.tokensFile === undefined) return;
    this.limiter = await this.state.choose<Promise<RateLimiter>>({
      memory: async () => this.limiter,
      redis: (redis) => RedisRateLimiter.connect(redis),
    });
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.limiter instanceof RedisRateLimiter) await this.limiter.close();
  }

  /** Counts one LLM-gateway turn of `principal`; throws (or rejects with) {@link RateLimitedError} past its limit. */
  admitTurn(principal: string | undefined): MaybePromise<void> {
    const grant = this.tokens.grantOf(principal);
    return this.admit(grant, 'turns', grant.turnsPerMinute);
  }

  /** Counts one tool call of `principal`; throws (or rejects with) {@link RateLimitedError} past its limit. */
  admitToolCall(principal: string | undefined): MaybePromise<void> {
    const grant = this.tokens.grantOf(principal);
    return this.admit(grant, 'tool calls', grant.toolCallsPerMinute);
  }

  private admit(grant: Grant, what: 'turns' | 'tool calls', limit: number | undefined): MaybePromise<void> {
    if (limit === undefined || grant.name === undefined) return undefined;
    const key = `${what === 'turns' ? 'turns' : 'tools'}:${grant.name}`;
    return thenMaybe(this.limiter.hit(key, limit, this.windowMs), (decision: RateDecision) => {
      if (!decision.allowed) throw new RateLimitedError(what, limit, this.windowMs, decision.retryAfterMs);
    });
  }
}
