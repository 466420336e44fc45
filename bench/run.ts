import { benchAudio } from './suites/audio';
import { benchFleet } from './suites/fleet';
import { benchGlobAbuse } from './suites/fleet-glob-abuse';
import { benchHolding } from './suites/fleet-holding';
import { benchFleetOps } from './suites/fleet-ops';
import { benchIdentity } from './suites/identity';
import { benchIdleConnections } from './suites/idle-connections';
import { benchLlmTurn } from './suites/llm-turn';
import { benchPeer } from './suites/peer';
import { benchTokensFile } from './suites/tokens-file';
import { benchToolCalls } from './suites/tool-calls';
import { benchXiaozhi } from './suites/xiaozhi';

/**
 * `npm run bench`: every figure of BENCHMARKS.md, one JSON line each on stdout. `--smoke` runs
 * each suite for a moment with small counts (what the test suite does, to keep the scripts
 * working); `--only=<suite>[,<suite>]` runs some of them.
 */
const SUITES = {
  'tool-calls': (smoke: boolean) =>
    benchToolCalls({
      connections: [1, 50],
      bounds: smoke ? { warmupMs: 100, durationMs: 300, maxCallsPerConnection: 200 } : { warmupMs: 2000, durationMs: 5000, maxCallsPerConnection: 200_000 },
    }),
  'llm-turn': (smoke: boolean) => benchLlmTurn({ warmupTurns: smoke ? 5 : 200, turns: smoke ? 20 : 2000, pacedTurns: smoke ? 2 : 20 }),
  idle: (smoke: boolean) => benchIdleConnections({ connections: smoke ? 200 : 10_000 }),
  peer: (smoke: boolean) =>
    benchPeer({
      connections: [1, 50],
      bounds: smoke ? { warmupMs: 100, durationMs: 300, maxCallsPerConnection: 200 } : { warmupMs: 2000, durationMs: 5000, maxCallsPerConnection: 200_000 },
    }),
  'tokens-file': (smoke: boolean) =>
    benchTokensFile({
      connections: smoke ? [50] : [1, 50],
      protocols: smoke ? ['litemcp'] : ['litemcp', 'mcp-plain', 'utcp'],
      rounds: smoke ? 1 : 3,
      microIterations: smoke ? 2_000 : 200_000,
      bounds: smoke ? { warmupMs: 100, durationMs: 300, maxCallsPerConnection: 200 } : { warmupMs: 2000, durationMs: 5000, maxCallsPerConnection: 200_000 },
    }),
  identity: (smoke: boolean) => benchIdentity(smoke ? { iterations: 200, freshTokens: 5 } : { iterations: 20_000, freshTokens: 500 }),
  fleet: (smoke: boolean) =>
    benchFleet({
      calls: {
        connections: smoke ? [1] : [1, 8],
        bounds: smoke ? { warmupMs: 100, durationMs: 300, maxCallsPerConnection: 200 } : { warmupMs: 2000, durationMs: 5000, maxCallsPerConnection: 200_000 },
        rounds: smoke ? 1 : 5,
      },
      fanout: smoke ? { devices: 20, concurrency: 8, warmup: 4, rounds: 1 } : { devices: 10_000, concurrency: 64, warmup: 1000, rounds: 3 },
      idle: smoke ? { devices: 100, settleMs: 200 } : { devices: 100_000, settleMs: 1000 },
    }),
  'glob-abuse': (smoke: boolean) =>
    benchGlobAbuse(smoke ? { devices: 20, durationMs: 300, pingEveryMs: 10 } : { devices: 2000, durationMs: 5000, pingEveryMs: 10 }),
  holding: (smoke: boolean) =>
    benchHolding(smoke ? { devices: 5, pushes: 4, chars: 200, concurrency: 4 } : { devices: 200, pushes: 16, chars: 2000, concurrency: 16 }),
  'fleet-ops': (smoke: boolean) =>
    benchFleetOps(
      smoke
        ? { turns: { warmup: 3, count: 10, rounds: 2 }, pushes: { warmup: 3, count: 10, rounds: 2 }, connects: { warmup: 2, count: 4, rounds: 2 }, idleMs: 200 }
        : {
            turns: { warmup: 200, count: 2000, rounds: 5 },
            pushes: { warmup: 200, count: 2000, rounds: 5 },
            connects: { warmup: 20, count: 300, rounds: 5 },
            idleMs: 2000,
          },
    ),
  audio: (smoke: boolean) => benchAudio(smoke ? { rounds: 1, repeats: 1 } : { rounds: 5, repeats: 10 }),
  xiaozhi: (smoke: boolean) =>
    benchXiaozhi(
      smoke
        ? {
            single: { rounds: 0 },
            scale: { steps: [2], rounds: 1, lateShare: 0.01, latencyDevices: 2 },
            idle: { devices: 20 },
            warmup: { devices: 0, rounds: 0 },
            baseline: { rounds: 1, repeats: 1 },
            mqtt: { devices: [1, 2], rounds: 1, idleDevices: 20 },
            pauses: { idleWindowMs: 500, settleMs: 200, idleSettleMs: 500 },
          }
        : {
            single: { rounds: 20 },
            scale: { steps: [10, 20, 30, 40, 50, 75, 100, 150, 200, 300], rounds: 3, lateShare: 0.01, latencyDevices: 100 },
            idle: { devices: 5000 },
            warmup: { devices: 4, rounds: 1 },
            baseline: { rounds: 5, repeats: 10 },
            mqtt: { devices: [1, 10, 20, 100], rounds: 10, idleDevices: 5000 },
          },
    ),
};
type SuiteName = keyof typeof SUITES;

async function main(): Promise<void> {
  const smoke = process.argv.includes('--smoke');
  const only = process.argv
    .find((arg) => arg.startsWith('--only='))
    ?.slice('--only='.length)
    .split(',');
  const unknown = only?.filter((name) => !(name in SUITES));
  if (unknown?.length) throw new Error(`Unknown suite ${unknown.join(', ')}; choose from ${Object.keys(SUITES).join(', ')}`);
  for (const name of Object.keys(SUITES) as SuiteName[]) {
    if (!only || only.includes(name)) await SUITES[name](smoke);
  }
}

main().catch((error: Error) => {
  process.stderr.write(`bench failed: ${error.stack ?? error}\n`);
  process.exit(1);
});
