/** How the client reconnects after its socket drops. */
export interface ReconnectOptions {
  /** Delay before the first attempt, ms. Default 500. */
  initialDelayMs?: number;
  /** Longest delay between attempts, ms. Default 15 000. */
  maxDelayMs?: number;
  /** Each attempt's delay is the previous one times this. Default 2. */
  factor?: number;
  /** Share of the delay drawn at random either way (0-1), so devices do not return in step. Default 0.25. */
  jitter?: number;
  /** Attempts before giving up (each pending request then fails with RECONNECT_FAILED). Default: no limit. */
  maxAttempts?: number;
}

export type ReconnectPolicy = Required<ReconnectOptions>;

export const DEFAULT_RECONNECT: ReconnectPolicy = {
  initialDelayMs: 500,
  maxDelayMs: 15_000,
  factor: 2,
  jitter: 0.25,
  maxAttempts: Infinity,
};

/** The options with defaults filled in; a RangeError names any value that makes no sense. */
export function reconnectPolicy(options: ReconnectOptions = {}): ReconnectPolicy {
  const policy = { ...DEFAULT_RECONNECT, ...definedOnly(options) };
  const problems: string[] = [];
  if (!(policy.initialDelayMs >= 0)) problems.push('initialDelayMs must be 0 or more');
  if (!(policy.maxDelayMs >= policy.initialDelayMs)) problems.push('maxDelayMs must be at least initialDelayMs');
  if (!(policy.factor >= 1)) problems.push('factor must be 1 or more');
  if (!(policy.jitter >= 0 && policy.jitter <= 1)) problems.push('jitter must be between 0 and 1');
  if (!(policy.maxAttempts >= 1)) problems.push('maxAttempts must be 1 or more');
  if (problems.length > 0) throw new RangeError(`Invalid reconnect options: ${problems.join('; ')}`);
  return policy;
}

/** Delay before reconnection attempt `attempt` (1 for the first): exponential, capped, jittered. */
export function backoffDelay(attempt: number, policy: ReconnectPolicy, random: () => number = Math.random): number {
  const base = Math.min(policy.maxDelayMs, policy.initialDelayMs * policy.factor ** Math.max(0, attempt - 1));
  const spread = base * policy.jitter;
  return Math.round(Math.min(policy.maxDelayMs, Math.max(0, base - spread + random() * 2 * spread)));
}

function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, entry]) => entry !== undefined)) as Partial<T>;
}
