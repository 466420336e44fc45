import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit, Optional } from '@nestjs/common';
import { ANONYMOUS_PRINCIPAL, AccessTokenService } from '../auth/access-token.service';
import { ThrottledWarning } from '../logging/throttled-warning';
import { GatewayState } from '../state/gateway-state';
import { BudgetExceededError, BudgetScope } from './budget-exceeded.error';
import { BudgetLimits, limitName, stricterLimits } from './budget-limits';
import { BUDGET_PERIODS, BudgetPeriod, Meter, METERS, periodAt, UNITS_PER_LIMIT_UNIT } from './budget-meters';
import { BUDGET_OBSERVER, BudgetObserver } from './budget-observer';
import { MemoryUsageCounters } from './memory-usage-counters';
import { RedisUsageCounters } from './redis-usage-counters';
import type { CounterSpend, UsageCounters } from './usage-counters';

/** Who spends: the connection's principal (`undefined`: the anonymous one, auth off) and the device it connected as, if it named one. */
export interface BudgetSubject {
  principal?: string;
  deviceId?: string;
}

/** One meter over one period, as the API shows it; amounts in the limit's units (seconds for audio). */
export interface MeterUsage {
  used: number;
  limit: number | null;
  remaining: number | null;
  resets_at: string;
}

export type UsageView = Record<Meter, Record<BudgetPeriod, MeterUsage>>;

/** The limits that apply to a subject: its device's and its principal's. */
export interface SubjectLimits {
  device: BudgetLimits;
  principal: BudgetLimits;
}

/**
 * An amount set aside before the spending it stands for is known (a turn's `max_tokens`):
 * concurrent spends see it at once, and it is given back when the real usage has been charged.
 */
export interface Reservation {
  /** Charges real usage (unchecked: what was spent is spent). */
  charge(amount: number): Promise<void>;
  /** Gives the reservation back; once, whatever calls it again. */
  release(): Promise<void>;
}

interface Counted {
  spend: CounterSpend;
  scope: BudgetScope;
  meter: Meter;
  period: BudgetPeriod;
}

/** What an unchecked charge passes for limits: it only adds. */
const NO_LIMITS: SubjectLimits = { device: {}, principal: {} };

/** Rounds an amount of counter units to the limit's units (seconds with milliseconds). */
const inLimitUnits = (meter: Meter, units: number) => Math.round((units / UNITS_PER_LIMIT_UNIT[meter]) * 1000) / 1000;

/**
 * Budgets per device and per principal, per UTC day and month, of LLM tokens, synthesized
 * characters and recognized audio seconds. Limits come from the tokens file (`budgets`, of the
 * principal and `per_device`) and from the device's owner (`PUT /devices/<id>/budget`); where
 * both limit a device, the stricter applies. Counters live where the state module decides (Redis
 * with `REDIS_URL`, shared by every instance), and every check-and-spend is one atomic step.
 *
 * Usage is counted for every principal, limits or not, so it can be shown. When Redis fails,
 * spends are let through and the failure logged, as rate limits are: a Redis blip must not
 * silence every device.
 */
@Injectable()
export class BudgetService implements OnModuleInit, OnApplicationShutdown {
  private counters: UsageCounters = new MemoryUsageCounters();
  private readonly failing = new ThrottledWarning(new Logger('Budgets'));

  constructor(
    private readonly tokens: AccessTokenService,
    private readonly state: GatewayState,
    @Optional() @Inject(BUDGET_OBSERVER) private readonly observer?: BudgetObserver,
  ) {}

  async onModuleInit(): Promise<void> {
    this.counters = await this.state.choose<Promise<UsageCounters>>({
      memory: async () => this.counters,
      redis: (redis) => RedisUsageCounters.connect(redis),
    });
  }

  async onApplicationShutdown(): Promise<void> {
    await this.counters.close();
  }

  /**
   * Spends `amount` (in counter units: milliseconds for audio) of `meter` now, if neither the
   * device's nor the principal's budget of it is spent, nor of the meters in `alsoCheck`; throws
   * {@link BudgetExceededError} otherwise, and nothing is counted.
   */
  async spend(subject: BudgetSubject, meter: Meter, amount: number, alsoCheck: Meter[] = []): Promise<void> {
    const counted = await this.trySpend(subject, meter, amount, alsoCheck);
    if (counted) this.observer?.usageCharged(this.principalLabel(subject), meter, inLimitUnits(meter, amount));
  }

  /**
   * Sets `amount` of `meter` aside, checked as {@link spend} is; the real usage is charged to the
   * reservation as it becomes known, and the reservation given back at the end.
   */
  async reserve(subject: BudgetSubject, meter: Meter, amount: number, alsoCheck: Meter[] = []): Promise<Reservation> {
    const counted = await this.trySpend(subject, meter, amount, alsoCheck);
    const reserved = (counted ?? []).filter((each) => each.meter === meter).map(({ spend }) => ({ ...spend, amount: -amount }));
    let released = false;
    return {
      charge: (used) => this.charge(subject, meter, used),
      release: async () => {
        if (released) return;
        released = true;
        await this.counters.add(reserved).catch((error: Error) => this.warn(error));
      },
    };
  }

  /** Charges usage that has happened, unchecked (in counter units). */
  async charge(subject: BudgetSubject, meter: Meter, amount: number): Promise<void> {
    if (!(amount > 0)) return;
    const counters = this.countersOf(subject, [meter], NO_LIMITS, Date.now()).map(({ spend }) => ({ ...spend, amount }));
    await this.counters.add(counters).catch((error: Error) => this.warn(error));
    this.observer?.usageCharged(this.principalLabel(subject), meter, inLimitUnits(meter, amount));
  }

  /** A device's usage (its own counters) with the limits that apply to it when `principal` connects it. */
  async deviceUsage(deviceId: string, principal: string | undefined): Promise<UsageView> {
    const subject = { principal, deviceId };
    const limits = (await this.limitsFor(subject)).device;
    const now = Date.now();
    const windows = BUDGET_PERIODS.map((period) => periodAt(period, now));
    const keys = METERS.flatMap((meter) => windows.map((window) => this.key('device', deviceId, meter, window.id)));
    const values = await this.counters.read(keys);
    const view = {} as UsageView;
    METERS.forEach((meter, m) => {
      view[meter] = {} as Record<BudgetPeriod, MeterUsage>;
      windows.forEach((window, w) => {
        const used = inLimitUnits(meter, values[m * windows.length + w]);
        const limit = limits[limitName(meter, window.period)] ?? null;
        view[meter][window.period] = {
          used,
          limit,
          remaining: limit === null ? null : Math.max(0, Math.round((limit - used) * 1000) / 1000),
          resets_at: new Date(window.resetsAt).toISOString(),
        };
      });
    });
    return view;
  }

  /** The limits the owner of `deviceId` set; `{}` when none. */
  async ownerLimits(deviceId: string): Promise<BudgetLimits> {
    return (await this.counters.deviceLimits(deviceId)) ?? {};
  }

  /** Replaces the limits the owner of `deviceId` set (`{}` clears them). */
  async setOwnerLimits(deviceId: string, limits: BudgetLimits): Promise<void> {
    await this.counters.setDeviceLimits(deviceId, limits);
  }

  /** The limits that apply: the principal's from the tokens file; the device's, the stricter of the file's `per_device` and its owner's. */
  async limitsFor(subject: BudgetSubject): Promise<SubjectLimits> {
    const budgets = this.tokens.grantOf(subject.principal).budgets;
    const owners = subject.deviceId === undefined ? undefined : await this.counters.deviceLimits(subject.deviceId);
    return { principal: budgets?.total ?? {}, device: stricterLimits(budgets?.perDevice, owners) };
  }

  /** The spend, checked; the counters it touched, or `undefined` when Redis failed and it was let through. */
  private async trySpend(subject: BudgetSubject, meter: Meter, amount: number, alsoCheck: Meter[]): Promise<Counted[] | undefined> {
    try {
      const now = Date.now();
      const limits = await this.limitsFor(subject);
      const meters = [meter, ...alsoCheck.filter((other) => other !== meter)];
      const counted = this.countersOf(subject, meters, limits, now).map((each) =>
        each.meter === meter ? { ...each, spend: { ...each.spend, amount } } : each,
      );
      const outcome = await this.counters.spend(counted.map(({ spend }) => spend));
      if (outcome.allowed) return counted;
      const { scope, period, meter: spent } = counted[outcome.refusedAt];
      this.observer?.budgetRefused(this.principalLabel(subject), spent);
      const limit = (scope === 'device' ? limits.device : limits.principal)[limitName(spent, period)]!;
      throw new BudgetExceededError(spent, period, scope, limit, periodAt(period, now).resetsAt);
    } catch (error) {
      if (error instanceof BudgetExceededError) throw error;
      this.warn(error as Error);
      return undefined;
    }
  }

  /** The counters of `meters` for the subject's device (if any) and principal, this day and month, each with its limit in counter units. */
  private countersOf(subject: BudgetSubject, meters: Meter[], limits: SubjectLimits, now: number): Counted[] {
    const counted: Counted[] = [];
    const owners: [BudgetScope, string | undefined, BudgetLimits][] = [
      ['device', subject.deviceId, limits.device],
      ['principal', subject.principal ?? ANONYMOUS_PRINCIPAL, limits.principal],
    ];
    for (const [scope, id, scopeLimits] of owners) {
      if (id === undefined) continue;
      for (const meter of meters) {
        for (const period of BUDGET_PERIODS) {
          const window = periodAt(period, now);
          const limit = scopeLimits[limitName(meter, period)];
          counted.push({
            scope,
            meter,
            period,
            spend: {
              key: this.key(scope, id, meter, window.id),
              limit: limit === undefined ? undefined : limit * UNITS_PER_LIMIT_UNIT[meter],
              amount: 0,
              expiresAt: window.resetsAt,
            },
          });
        }
      }
    }
    return counted;
  }

  private key(scope: BudgetScope, id: string, meter: Meter, periodId: string): string {
    return `${scope === 'device' ? 'd' : 'p'}:${id}:${meter}:${periodId}`;
  }

  /**
   * The principal as a metric label, bounded by what the operator configured: the token's name
   * in the tokens file (`oidc:<rule>` for a JWT's), `anonymous`, or the principal of an
   * `AUTH_TOKENS` token. Never a device id.
   */
  private principalLabel(subject: BudgetSubject): string {
    const principal = subject.principal ?? ANONYMOUS_PRINCIPAL;
    if (principal === ANONYMOUS_PRINCIPAL) return principal;
    const name = this.tokens.grantOf(principal).name;
    if (this.tokens.isJwtPrincipal(principal)) return `oidc:${name ?? 'other'}`;
    return name ?? principal;
  }

  private warn(error: Error): void {
    this.failing.warn(`Budgets are not enforced while their store fails: ${error.message}`);
  }
}
