/**
 * Wait before reconnection attempt `attempt` (1 for the first retry): exponential from `minMs`,
 * capped at `maxMs`, with "equal jitter" (between half and all of that step, never under
 * `minMs`) so that upstreams that failed together, or many gateways of one upstream, do not
 * all retry at the same moment.
 */
export function retryDelayMs(attempt: number, minMs: number, maxMs: number, random: () => number = Math.random): number {
  const step = Math.min(maxMs, minMs * 2 ** Math.min(Math.max(attempt - 1, 0), 32));
  return Math.max(minMs, Math.round(step / 2 + (random() * step) / 2));
}
