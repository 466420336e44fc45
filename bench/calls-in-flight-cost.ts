/**
 * `node dist-bench/bench/calls-in-flight-cost.js`: the CPU the per-connection bound on calls in
 * flight (`WS_MAX_CALLS_IN_FLIGHT`) adds to one tool call, in process on the gateway's build: a
 * call that answers at once, and one that answers later (a promise settled on the next turn of
 * the event loop, awaited before the next call, as a client waiting for its answer would). One
 * JSON line; nanoseconds per call, median of five runs, beside the same calls made bare.
 */
// The gateway's build, as the other suites run it (`npm run bench` builds it first).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { CallsInFlight } = require('../../dist/core/limits/calls-in-flight') as typeof import('../src/core/limits/calls-in-flight');

const SYNC_CALLS = 5_000_000;
const ASYNC_CALLS = 200_000;
const RUNS = 5;

async function nanosecondsPerCall(calls: number, call: () => unknown): Promise<number> {
  const samples: number[] = [];
  for (let run = 0; run <= RUNS; run += 1) {
    const start = process.cpuUsage();
    for (let index = 0; index < calls; index += 1) await call();
    const used = process.cpuUsage(start);
    if (run > 0) samples.push(((used.user + used.system) * 1000) / calls); // the first run warms up
  }
  return Math.round(samples.sort((a, b) => a - b)[Math.floor(RUNS / 2)] * 10) / 10;
}

/** The synchronous loop without `await`, which would cost more than what is measured. */
function nanosecondsPerSyncCall(call: () => number): number {
  const samples: number[] = [];
  let sink = 0;
  for (let run = 0; run <= RUNS; run += 1) {
    const start = process.cpuUsage();
    for (let index = 0; index < SYNC_CALLS; index += 1) sink += call();
    const used = process.cpuUsage(start);
    if (run > 0) samples.push(((used.user + used.system) * 1000) / SYNC_CALLS);
  }
  if (sink < 0) throw new Error('unreachable');
  return Math.round(samples.sort((a, b) => a - b)[Math.floor(RUNS / 2)] * 10) / 10;
}

async function main(): Promise<void> {
  const bound = new CallsInFlight(64);
  const answerNow = () => 1;
  const answerLater = () => new Promise<number>((resolve) => setImmediate(() => resolve(1)));
  const figure = {
    figure: 'calls_in_flight_cost_per_tool_call',
    ns_cpu: {
      sync: { bare: nanosecondsPerSyncCall(answerNow), bounded: nanosecondsPerSyncCall(() => bound.run(answerNow) as number) },
      async: { bare: await nanosecondsPerCall(ASYNC_CALLS, answerLater), bounded: await nanosecondsPerCall(ASYNC_CALLS, () => bound.run(answerLater)) },
    },
    runs: RUNS,
  };
  process.stdout.write(`${JSON.stringify(figure)}\n`);
}

void main();
