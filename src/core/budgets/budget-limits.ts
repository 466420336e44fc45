import { isPlainObject } from '../plain-object';
import { BudgetPeriod, LIMIT_NAMES, LimitName, Meter } from './budget-meters';

/** Limits of one subject (a principal, or a device), by name; an absent name is no limit. */
export type BudgetLimits = Readonly<Partial<Record<LimitName, number>>>;

/**
 * The `budgets` of a tokens-file entry or `oidc` rule: limits over everything the principal's
 * devices spend together, and `per_device` limits that each of its devices has on its own.
 */
export interface PrincipalBudgets {
  readonly total: BudgetLimits;
  readonly perDevice: BudgetLimits;
}

const LIMIT_KEYS = new Set<string>(LIMIT_NAMES);
const BUDGET_KEYS = new Set<string>([...LIMIT_NAMES, 'per_device']);
/** The largest limit: beyond it, counters would not stay exact in a double (Redis' Lua numbers). */
const MAX_LIMIT = 1e12;

export const limitName = (meter: Meter, period: BudgetPeriod): LimitName => `${meter}_per_${period}`;

/**
 * Reads limits (`{llm_tokens_per_day: 20000, ...}`), each a positive integer, every problem
 * reported through `problem` with its key (`where` is prefixed: `budgets.per_device`).
 */
export function readBudgetLimits(value: unknown, where: string, problem: (message: string) => void): BudgetLimits {
  if (!isPlainObject(value)) {
    problem(`${where} must be an object of limits: {llm_tokens_per_day: 20000, tts_chars_per_month: 100000}`);
    return {};
  }
  const limits: Partial<Record<LimitName, number>> = {};
  for (const [key, limit] of Object.entries(value)) {
    if (!LIMIT_KEYS.has(key)) problem(`${where}: unknown key "${key}" (known: ${LIMIT_NAMES.join(', ')})`);
    else if (!Number.isInteger(limit) || (limit as number) <= 0 || (limit as number) > MAX_LIMIT)
      problem(`${where}.${key} must be a positive integer (at most ${MAX_LIMIT})`);
    else limits[key as LimitName] = limit as number;
  }
  return Object.freeze(limits);
}

/** The tokens file's `budgets` (limits and an optional `per_device` object of limits); `undefined` when absent. */
export function readPrincipalBudgets(value: unknown, problem: (message: string) => void): PrincipalBudgets | undefined {
  if (value === undefined) return undefined;
  if (!isPlainObject(value)) {
    problem('budgets must be an object: {llm_tokens_per_month: 1000000, per_device: {llm_tokens_per_day: 20000}}');
    return undefined;
  }
  const { per_device: perDevice, ...own } = value;
  for (const key of Object.keys(own)) if (!BUDGET_KEYS.has(key)) problem(`budgets: unknown key "${key}" (known: ${[...BUDGET_KEYS].join(', ')})`);
  const total = readBudgetLimits(Object.fromEntries(Object.entries(own).filter(([key]) => LIMIT_KEYS.has(key))), 'budgets', problem);
  return Object.freeze({ total, perDevice: perDevice === undefined ? {} : readBudgetLimits(perDevice, 'budgets.per_device', problem) });
}

/** The stricter of two sets of limits, name by name: the smaller limit where both set one. */
export function stricterLimits(a: BudgetLimits | undefined, b: BudgetLimits | undefined): BudgetLimits {
  const limits: Partial<Record<LimitName, number>> = { ...a };
  for (const [name, limit] of Object.entries(b ?? {}) as [LimitName, number][]) limits[name] = Math.min(limits[name] ?? limit, limit);
  return limits;
}
