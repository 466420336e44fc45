/**
 * `node dist-bench/bench/metrics-cost.js`: the CPU what one tool call records in the metrics costs
 * (its tool-call counter, its duration, its frame), through the gateway's bound series and, for
 * comparison, through prom-client's own label children. One JSON line; nanoseconds per call,
 * median of five runs of two million calls. Set beside the CPU a whole call costs (the
 * tool-call figures), it is the metrics' share of a tool call.
 */
import { Counter, Histogram, Registry } from 'prom-client';
import type { ToolDefinition, ToolOutcome } from '../src/core/tools/tool-definition';

// The gateway's build, as the other suites run it (`npm run bench` builds it first).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { MetricsService } = require('../../dist/metrics/metrics.service') as typeof import('../src/metrics/metrics.service');

const CALLS = 2_000_000;
const RUNS = 5;

function nanosecondsPerCall(record: () => void): number {
  const samples: number[] = [];
  for (let run = 0; run <= RUNS; run += 1) {
    const start = process.cpuUsage();
    for (let call = 0; call < CALLS; call += 1) record();
    const used = process.cpuUsage(start);
    if (run > 0) samples.push(((used.user + used.system) * 1000) / CALLS); // the first run warms up
  }
  return Math.round(samples.sort((a, b) => a - b)[Math.floor(RUNS / 2)] * 10) / 10;
}

const tool = { name: 'calculator', source: 'module' } as ToolDefinition;
const outcome: ToolOutcome = { ok: true, value: 5, durationMs: 0.02 };

const metrics = new MetricsService();
const frames = metrics.frameObserver('litemcp');
const bound = nanosecondsPerCall(() => {
  metrics.toolCallEnded(tool, 'litemcp', outcome, true);
  frames.answered();
});

const registry = new Registry();
const calls = new Counter({ name: 'calls_total', help: 'c', labelNames: ['protocol', 'tool', 'source', 'outcome'], registers: [registry] });
const durations = new Histogram({ name: 'duration_seconds', help: 'd', labelNames: ['protocol', 'tool', 'source'], registers: [registry] });
const frameCounter = new Counter({ name: 'frames_total', help: 'f', labelNames: ['protocol', 'outcome'], registers: [registry] });
const callChild = calls.labels('litemcp', 'calculator', 'module', 'ok');
const durationChild = durations.labels('litemcp', 'calculator', 'module');
const frameChild = frameCounter.labels('litemcp', 'ok');
const promClientChildren = nanosecondsPerCall(() => {
  callChild.inc();
  durationChild.observe(outcome.durationMs / 1000);
  frameChild.inc();
});

process.stdout.write(
  `${JSON.stringify({ figure: 'metrics_cost_per_tool_call', ns_cpu: { bound_series: bound, prom_client_children: promClientChildren }, calls: CALLS, runs: RUNS })}\n`,
);
