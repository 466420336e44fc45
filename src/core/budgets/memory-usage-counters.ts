import type { BudgetLimits } from './budget-limits';
import type { CounterSpend, SpendOutcome, UsageCounters } from './usage-counters';

interface Counter {
  value: number;
  expiresAt: number;
}

/** How many counters may be kept before those whose period is over are swept away. */
const SWEEP_ABOVE = 10_000;
/** Device limits kept at most: one per device id an owner configured. */
const MAX_DEVICE_LIMITS = 100_000;

/**
 * {@link UsageCounters} in this process: exact, since a spend runs to its end before another
 * starts (one thread), and bounded, since counters of periods that are over are swept away.
 */
export class MemoryUsageCounters implements UsageCounters {
  private readonly counters = new Map<string, Counter>();
  private readonly limits = new Map<string, BudgetLimits>();

  constructor(private readonly now: () => number = Date.now) {}

  spend(counters: CounterSpend[]): Promise<SpendOutcome> {
    const refusedAt = counters.findIndex(({ key, limit }) => limit !== undefined && this.value(key) >= limit);
    if (refusedAt !== -1) return Promise.resolve({ allowed: false, refusedAt });
    this.addAll(counters);
    return Promise.resolve({ allowed: true });
  }

  add(counters: Omit<CounterSpend, 'limit'>[]): Promise<void> {
    this.addAll(counters);
    return Promise.resolve();
  }

  read(keys: string[]): Promise<number[]> {
    return Promise.resolve(keys.map((key) => this.value(key)));
  }

  deviceLimits(deviceId: string): Promise<BudgetLimits | undefined> {
    return Promise.resolve(this.limits.get(deviceId));
  }

  setDeviceLimits(deviceId: string, limits: BudgetLimits | undefined): Promise<void> {
    if (!limits || Object.keys(limits).length === 0) this.limits.delete(deviceId);
    else {
      if (!this.limits.has(deviceId) && this.limits.size >= MAX_DEVICE_LIMITS) return Promise.reject(new Error('Too many devices have budgets set'));
      this.limits.set(deviceId, { ...limits });
    }
    return Promise.resolve();
  }

  close(): Promise<void> {
    return Promise.resolve();
  }

  private value(key: string): number {
    const counter = this.counters.get(key);
    return counter && counter.expiresAt > this.now() ? counter.value : 0;
  }

  private addAll(counters: Omit<CounterSpend, 'limit'>[]): void {
    const now = this.now();
    for (const { key, amount, expiresAt } of counters) {
      let counter = this.counters.get(key);
      if (!counter || counter.expiresAt <= now) {
        if (this.counters.size >= SWEEP_ABOVE) this.sweep(now);
        counter = { value: 0, expiresAt };
        this.counters.set(key, counter);
      }
      counter.value = Math.max(0, counter.value + amount);
      counter.expiresAt = expiresAt;
    }
  }

  private sweep(now: number): void {
    for (const [key, counter] of this.counters) if (counter.expiresAt <= now) this.counters.delete(key);
  }
}
