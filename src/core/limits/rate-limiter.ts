import type { MaybePromise } from '../maybe-promise';

/** One more request counted: let through, or refused with how long until the window ends. */
export type RateDecision = { allowed: true } | { allowed: false; retryAfterMs: number };

export const ALLOWED: RateDecision = Object.freeze({ allowed: true });

/**
 * Counts requests per key in fixed windows: the first request of a key opens a window of
 * `windowMs`, and within it at most `limit` are let through. A fixed window is one counter and
 * one expiry per key, which Redis does in one atomic round trip; its known weakness (up to twice
 * the limit across a window boundary) is acceptable for abuse protection.
 */
export interface RateLimiter {
  hit(key: string, limit: number, windowMs: number): MaybePromise<RateDecision>;
}
