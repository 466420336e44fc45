import { GatewayError, GatewayErrorCode } from '../errors/gateway-error';

/**
 * A request over its token's rate limit. Every protocol answers it in its own words with the
 * wait: an LLM-gateway `error` frame `RATE_LIMITED` with `details.retry_after_s`, a JSON-RPC
 * error with `data.retry_after_s`, HTTP 429 with `Retry-After`.
 */
export class RateLimitedError extends GatewayError {
  /** Whole seconds until the window lets the request through (at least 1, as `Retry-After` counts). */
  readonly retryAfterS: number;

  constructor(what: string, limit: number, windowMs: number, retryAfterMs: number) {
    const retryAfterS = Math.max(1, Math.ceil(retryAfterMs / 1000));
    super(GatewayErrorCode.RATE_LIMITED, `Rate limit reached: at most ${limit} ${what} per ${windowMs / 1000} s; try again in ${retryAfterS} s`);
    this.name = 'RateLimitedError';
    this.retryAfterS = retryAfterS;
  }

  /** The wait as the structured part of an answer (`details`, `data`). */
  get wait(): { retry_after_s: number } {
    return { retry_after_s: this.retryAfterS };
  }
}
