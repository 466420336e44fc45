import { join } from 'path';
import { ScriptedLlm } from '../test/support/scripted-llm';
import { PROJECT_ROOT } from './support/processes';
import { emit } from './support/stats';
import { CatastrophicPatternOptions, soakCatastrophicPattern } from './soak/catastrophic-pattern';
import { CHURN_SETTINGS, ChurnOptions, ChurnSessions, soakChurn } from './soak/churn';
import { writeReport } from './soak/report';
import { SlowReaderOptions, soakSlowReaders } from './soak/slow-reader';
import { SoakGateway, startSoakGateway } from './soak/soak-process';
import { soakUnauthenticatedStall, UnauthenticatedStallOptions } from './soak/unauthenticated-stall';
import { soakUnauthenticatedWave, UnauthenticatedWaveOptions } from './soak/unauthenticated-wave';

/**
 * `npm run soak`: the heavier run of the probing suite, against the built gateway in a process
 * of its own (soak/soak-gateway.ts), each phase on a fresh one: 10,000 connect/disconnect
 * cycles with device tool calls pending (released sessions all kept for the hour, kept up to the
 * per-token cap, then expiring in seconds), clients that stop reading, a catastrophic pattern while another client pings,
 * waves of sockets without a token streaming unfinished 16 MB frames, and an authenticated client's pings while 300 of them from
 * one address are renewed as fast as the gateway closes them. Prints one JSON line per figure and writes `soak.json` and
 * `soak.md` (the table RELIABILITY.md quotes) to `--out=<dir>` (default `soak-results/`).
 * `--smoke` runs every phase with tiny counts, to keep the script working (the test suite does);
 * `--only=<figure>,...` runs the phases of those figures alone.
 * Every phase is bounded in count and in time; the whole run takes a few minutes.
 */
const BOUND_BYTES = 4_194_304;

interface SoakPlan {
  churn: Omit<ChurnOptions, 'sessions'>;
  slowReaders: SlowReaderOptions[];
  pattern: CatastrophicPatternOptions;
  unauthenticated: UnauthenticatedWaveOptions;
  stall: UnauthenticatedStallOptions;
  /** WS_AUTH_TIMEOUT of those two phases: also how long a socket closed for going over the bound is held. */
  authTimeoutS: number;
}

const UNAUTHENTICATED_BOUND_BYTES = 65_536;

/** The routes that let a socket in before it authenticates (LiteMCP's want the token at the upgrade). */
const STALL_ROUTES = ['/utcp', '/mcp', '/utcp/calculator'];

const FULL: SoakPlan = {
  churn: { warmupCycles: 1_000, cycles: 10_000, censusCycles: 500, workers: 16, timeLimitMs: 300_000 },
  slowReaders: [1, 10].map((readers) => ({ readers, maxRequestsPerReader: 100_000, timeLimitMs: 60_000, boundBytes: BOUND_BYTES })),
  pattern: { windowMs: 5_000, length: 27, nativeLengths: [21, 23, 25] },
  unauthenticated: { sockets: 100, frameBytes: 16 * 1024 * 1024, waves: 3, boundBytes: UNAUTHENTICATED_BOUND_BYTES },
  // Longer than the hold (WS_AUTH_TIMEOUT), so the flood renews its sockets within the window.
  stall: { sockets: 300, frameBytes: 16 * 1024 * 1024, windowMs: 12_000, pingEveryMs: 5, routes: STALL_ROUTES },
  authTimeoutS: 10,
};

const SMOKE: SoakPlan = {
  churn: { warmupCycles: 20, cycles: 100, censusCycles: 20, workers: 4, timeLimitMs: 20_000 },
  slowReaders: [{ readers: 1, maxRequestsPerReader: 30_000, timeLimitMs: 15_000, boundBytes: BOUND_BYTES }],
  pattern: { windowMs: 500, length: 27, nativeLengths: [14, 16] },
  unauthenticated: { sockets: 4, frameBytes: 1024 * 1024, waves: 1, boundBytes: UNAUTHENTICATED_BOUND_BYTES },
  stall: { sockets: 4, frameBytes: 1024 * 1024, windowMs: 300, pingEveryMs: 5, routes: STALL_ROUTES },
  authTimeoutS: 1,
};

/** Runs `phase` on a fresh gateway (with `settings`), stopped whatever happens. */
async function onFreshGateway<T>(llm: ScriptedLlm, phase: (gateway: SoakGateway) => Promise<T>, settings: Record<string, string> = {}): Promise<T> {
  const gateway = await startSoakGateway(llm.baseUrl, { WS_MAX_BUFFERED_BYTES: String(BOUND_BYTES), ...settings });
  try {
    return await phase(gateway);
  } finally {
    await gateway.stop();
  }
}

async function main(): Promise<void> {
  const smoke = process.argv.includes('--smoke');
  const out = process.argv.find((arg) => arg.startsWith('--out='))?.slice('--out='.length) ?? join(PROJECT_ROOT, 'soak-results');
  const plan = smoke ? SMOKE : FULL;
  const llm = await ScriptedLlm.start();
  const figures: Record<string, unknown>[] = [];
  const record = (figure: Record<string, unknown>) => {
    figures.push(figure);
    emit(figure);
  };
  const only = process.argv
    .find((arg) => arg.startsWith('--only='))
    ?.slice('--only='.length)
    .split(',');
  const runs = (figure: string) => !only || only.includes(figure);
  try {
    if (runs('churn')) {
      for (const sessions of ['kept', 'capped', 'expiring'] as ChurnSessions[]) {
        record(await onFreshGateway(llm, (gateway) => soakChurn(gateway, llm, { ...plan.churn, sessions }), CHURN_SETTINGS[sessions]));
      }
    }
    if (runs('slow_reader')) for (const readers of plan.slowReaders) record(await onFreshGateway(llm, (gateway) => soakSlowReaders(gateway, readers)));
    if (runs('catastrophic_pattern')) record(await onFreshGateway(llm, (gateway) => soakCatastrophicPattern(gateway, llm, plan.pattern)));
    const unauthenticated = (sockets: number) => ({
      WS_UNAUTHENTICATED_MAX_BYTES: String(UNAUTHENTICATED_BOUND_BYTES),
      WS_MAX_CONNECTIONS_PER_ADDRESS: '0',
      WS_MAX_UNAUTHENTICATED: String(sockets),
      WS_AUTH_TIMEOUT: String(plan.authTimeoutS),
    });
    if (runs('unauthenticated_wave'))
      record(await onFreshGateway(llm, (gateway) => soakUnauthenticatedWave(gateway, plan.unauthenticated), unauthenticated(200)));
    if (runs('unauthenticated_stall')) {
      record(await onFreshGateway(llm, (gateway) => soakUnauthenticatedStall(gateway, plan.stall), unauthenticated(plan.stall.sockets + 100)));
    }
  } finally {
    await llm.close();
  }
  await writeReport(out, figures, smoke);
}

main().catch((error: Error) => {
  process.stderr.write(`soak failed: ${error.stack ?? error}\n`);
  process.exit(1);
});
