import { elapsedMs } from './stats';

/** One request-response exchange on one connection; rejects when the answer is wrong. */
export type Exchange = () => Promise<void>;

export interface LoopBounds {
  /** Unmeasured time first: JIT, connection pools and caches settle. */
  warmupMs: number;
  durationMs: number;
  /** Hard cap on measured calls per connection, whatever the duration. */
  maxCallsPerConnection: number;
}

export interface LoopResult {
  calls: number;
  seconds: number;
  latenciesMs: number[];
}

/**
 * Closed-loop load: each connection sends its next request as soon as the previous answer
 * arrives, so the rate is what the server sustains with that many callers, one call in flight
 * each. Bounded by time and by count.
 */
export async function runClosedLoop(exchanges: Exchange[], bounds: LoopBounds, before?: () => Promise<void>): Promise<LoopResult> {
  const warmupEnd = Date.now() + bounds.warmupMs;
  await Promise.all(exchanges.map((exchange) => loop(exchange, () => Date.now() < warmupEnd, bounds.maxCallsPerConnection)));
  await before?.();
  const latenciesMs: number[] = [];
  const start = process.hrtime.bigint();
  const end = Date.now() + bounds.durationMs;
  await Promise.all(exchanges.map((exchange) => loop(exchange, () => Date.now() < end, bounds.maxCallsPerConnection, latenciesMs)));
  return { calls: latenciesMs.length, seconds: elapsedMs(start) / 1000, latenciesMs };
}

async function loop(exchange: Exchange, going: () => boolean, maxCalls: number, latenciesMs?: number[]): Promise<void> {
  for (let calls = 0; calls < maxCalls && going(); calls++) {
    const start = process.hrtime.bigint();
    await exchange();
    latenciesMs?.push(elapsedMs(start));
  }
}
