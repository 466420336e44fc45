import type { BudgetLimits } from './budget-limits';

/** One counter a spend touches: its key, its limit in counter units (none: counted, never refused), what it adds, and when it expires. */
export interface CounterSpend {
  key: string;
  limit?: number;
  amount: number;
  /** Epoch milliseconds: the end of the counter's period. */
  expiresAt: number;
}

/** A spend let through, or the index of the first counter that was already at its limit. */
export type SpendOutcome = { allowed: true } | { allowed: false; refusedAt: number };

/**
 * Usage counters per period, and the limits device owners set, behind one interface: in this
 * instance's memory, or in Redis shared by every instance. {@link spend} is the one atomic step
 * that makes budgets exact under concurrency: it checks every limited counter and adds to all of
 * them, or to none.
 */
export interface UsageCounters {
  /**
   * If no limited counter has reached its limit (`used >= limit`), adds each its amount and
   * gives it its expiry; otherwise changes nothing. A counter below its limit lets the spend
   * through whatever its amount: that one spend may end past the limit.
   */
  spend(counters: CounterSpend[]): Promise<SpendOutcome>;
  /** Adds `amount` (negative: gives a reservation back) to each counter, unchecked. */
  add(counters: Omit<CounterSpend, 'limit'>[]): Promise<void>;
  /** The counters' values, 0 for one that does not exist (or expired). */
  read(keys: string[]): Promise<number[]>;
  /** The limits the owner of `deviceId` set for it; `undefined` when none. */
  deviceLimits(deviceId: string): Promise<BudgetLimits | undefined>;
  /** Sets (or, with `undefined` or none, clears) the limits of `deviceId`. */
  setDeviceLimits(deviceId: string, limits: BudgetLimits | undefined): Promise<void>;
  close(): Promise<void>;
}
