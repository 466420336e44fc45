/**
 * What a budget counts: LLM tokens (prompt and completion, from the model's `usage`),
 * synthesized characters, and recognized audio seconds. Audio is counted in whole milliseconds
 * (a counter is an integer, which Redis adds exactly); limits and views speak seconds.
 */
export const METERS = ['llm_tokens', 'tts_chars', 'stt_seconds'] as const;
export type Meter = (typeof METERS)[number];

/** The calendar periods a budget runs over, in UTC: a day from 00:00, a month from its 1st. */
export const BUDGET_PERIODS = ['day', 'month'] as const;
export type BudgetPeriod = (typeof BUDGET_PERIODS)[number];

/** A limit's name, as the tokens file and the API write it: `llm_tokens_per_day`. */
export type LimitName = `${Meter}_per_${BudgetPeriod}`;

export const LIMIT_NAMES: readonly LimitName[] = METERS.flatMap((meter) => BUDGET_PERIODS.map((period) => `${meter}_per_${period}` as const));

/** Counter units per unit of a limit: milliseconds per second of audio, one otherwise. */
export const UNITS_PER_LIMIT_UNIT: Record<Meter, number> = { llm_tokens: 1, tts_chars: 1, stt_seconds: 1000 };

/** What a meter's amount is called in messages. */
export const METER_WORDS: Record<Meter, string> = { llm_tokens: 'LLM tokens', tts_chars: 'synthesized characters', stt_seconds: 'seconds of recognized audio' };

/** One period as counters see it: its id (part of the key) and when the next begins. */
export interface PeriodWindow {
  period: BudgetPeriod;
  /** `2026-11-28` for a day, `2026-11` for a month. */
  id: string;
  /** Epoch milliseconds when the period ends and its counters start again from zero. */
  resetsAt: number;
}

const pad = (value: number) => String(value).padStart(2, '0');

/** The UTC day or month `now` falls in. */
export function periodAt(period: BudgetPeriod, now: number): PeriodWindow {
  const at = new Date(now);
  const year = at.getUTCFullYear();
  const month = at.getUTCMonth();
  if (period === 'day') {
    return { period, id: `${year}-${pad(month + 1)}-${pad(at.getUTCDate())}`, resetsAt: Date.UTC(year, month, at.getUTCDate() + 1) };
  }
  return { period, id: `${year}-${pad(month + 1)}`, resetsAt: Date.UTC(year, month + 1, 1) };
}
