import { GatewayError, GatewayErrorCode } from '../errors/gateway-error';
import { BudgetPeriod, Meter, METER_WORDS } from './budget-meters';

/** Whose budget is spent: the device's own, or its principal's over all its devices. */
export type BudgetScope = 'device' | 'principal';

/**
 * A turn, a synthesis or a recognition refused because a budget is spent (`BUDGET_EXCEEDED`):
 * the message says which, how much, and when it starts again; `details` carries the same for
 * clients that read it (an LLM-gateway `error` frame's `details`).
 */
export class BudgetExceededError extends GatewayError {
  constructor(
    readonly meter: Meter,
    readonly period: BudgetPeriod,
    readonly scope: BudgetScope,
    readonly limit: number,
    readonly resetsAt: number,
  ) {
    const whose = scope === 'device' ? "This device's" : "This account's";
    const when = new Date(resetsAt).toISOString().replace(/\.000Z$/, 'Z');
    super(
      GatewayErrorCode.BUDGET_EXCEEDED,
      `${whose} ${period === 'day' ? 'daily' : 'monthly'} budget of ${limit} ${METER_WORDS[meter]} is spent; it resets at ${when}`,
    );
    this.name = 'BudgetExceededError';
  }

  /** The refusal as the structured part of an answer. */
  get budget(): { meter: Meter; period: BudgetPeriod; scope: BudgetScope; limit: number; resets_at: string } {
    return { meter: this.meter, period: this.period, scope: this.scope, limit: this.limit, resets_at: new Date(this.resetsAt).toISOString() };
  }
}
