/** Latency summary of one measured run, in milliseconds. */
export interface LatencySummary {
  count: number;
  p50_ms: number;
  p99_ms: number;
  mean_ms: number;
}

/** Nearest-rank percentile of sorted samples. */
export function percentile(sorted: ArrayLike<number>, fraction: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(fraction * sorted.length) - 1));
  return sorted[rank];
}

export function summarise(samplesMs: number[]): LatencySummary {
  const sorted = Float64Array.from(samplesMs).sort();
  const total = sorted.reduce((sum, value) => sum + value, 0);
  return {
    count: sorted.length,
    p50_ms: round(percentile(sorted, 0.5)),
    p99_ms: round(percentile(sorted, 0.99)),
    mean_ms: round(sorted.length ? total / sorted.length : Number.NaN),
  };
}

/** The middle value (the upper middle of an even count). */
export function median(values: number[]): number {
  return [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
}

/** Three significant decimals: enough for sub-millisecond latencies, short enough to read. */
export function round(value: number, digits = 3): number {
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
}

export function ratio(measured: number, baseline: number): number {
  return round(measured / baseline, 3);
}

/** Prints one figure as one JSON line on stdout: what `npm run bench` promises. */
export function emit(figure: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify(figure)}\n`);
}

/** Elapsed milliseconds since `start` (a `process.hrtime.bigint()` reading). */
export function elapsedMs(start: bigint): number {
  return Number(process.hrtime.bigint() - start) / 1e6;
}
