import type { Meter } from './budget-meters';

/** DI token of the {@link BudgetObserver}, when the app has one (the metrics module provides it). */
export const BUDGET_OBSERVER = Symbol('BUDGET_OBSERVER');

/**
 * What budgets tell whoever watches them (the Prometheus metrics): usage charged and spends
 * refused, by principal label (a token's name, `anonymous`; never a device id) and meter.
 * `amount` is in the meter's limit units (seconds for audio).
 */
export interface BudgetObserver {
  usageCharged(principal: string, meter: Meter, amount: number): void;
  budgetRefused(principal: string, meter: Meter): void;
}
