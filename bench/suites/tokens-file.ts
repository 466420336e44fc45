import { mkdtempSync, rmSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import type { LoopBounds } from '../support/closed-loop';
import { BENCH_TOKEN, gatewayServer } from '../support/servers';
import { emit, median, ratio, round } from '../support/stats';
import { measureCheckCost } from './tokens-file-micro';
import { measureThroughput, PROTOCOLS, ThroughputFigures, withServer } from './tool-calls';

export interface TokensFileOptions {
  connections: number[];
  bounds: LoopBounds;
  /** Alternating runs of each variant; the median of each is compared, so one noisy run does not decide. */
  rounds: number;
  /** Calls per batch of the in-process measurement of the checks alone. */
  microIterations: number;
  protocols?: string[];
}

/**
 * The bench token as a named token of the tokens file, with every check a call meets: a tool
 * glob (`calc*`, matched against `calculator`), the protocols list, and a tool-call rate limit
 * high enough never to bite (so its counter runs on every call).
 */
const TOKENS_FILE = `tokens:
  - name: bench
    token: "${BENCH_TOKEN}"
    protocols: [llm, mcp, litemcp, utcp]
    tools: ["get_*", "calc*"]
    rate_limits: { tool_calls_per_minute: 1000000000 }
`;

function medianFigures(runs: ThroughputFigures[]): ThroughputFigures {
  return {
    calls_per_s: median(runs.map((run) => run.calls_per_s)),
    p50_ms: median(runs.map((run) => run.p50_ms)),
    p99_ms: median(runs.map((run) => run.p99_ms)),
    server_cpu_us_per_call: median(runs.map((run) => run.server_cpu_us_per_call)),
  };
}

/**
 * What permissions cost a tool call, two ways:
 * - the checks alone, in process on the real classes (`tokens_file_check_cost`), set against
 *   the gateway's whole CPU per call measured here: the share is the figure the 5% target is
 *   judged on, since it does not drown in the machine's noise;
 * - end to end (`tokens_file_checks`): the same gateway and calls with the bench token in
 *   `AUTH_TOKENS` (full access, no per-call check) and as a named token of `AUTH_TOKENS_FILE`
 *   (tool glob, protocols, rate-limit counter), runs alternating, medians compared.
 */
export async function benchTokensFile(options: TokensFileOptions): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'vtg-bench-tokens-'));
  const tokensFile = join(dir, 'tokens.yaml');
  writeFileSync(tokensFile, TOKENS_FILE, { mode: 0o600 });
  const variants = {
    without: (port: number) => gatewayServer(port),
    with: (port: number) => gatewayServer(port, { AUTH_TOKENS: '', AUTH_TOKENS_FILE: tokensFile }),
  };
  try {
    const cost = measureCheckCost(TOKENS_FILE, BENCH_TOKEN, options.microIterations);
    const cpuPerCall: number[] = [];
    const protocols = PROTOCOLS.filter((protocol) => !options.protocols || options.protocols.includes(protocol.name));
    for (const connections of options.connections) {
      for (const protocol of protocols) {
        const runs: Record<keyof typeof variants, ThroughputFigures[]> = { without: [], with: [] };
        for (let round = 0; round < options.rounds; round += 1) {
          for (const name of Object.keys(variants) as (keyof typeof variants)[]) {
            runs[name].push(await withServer(variants[name], (server) => measureThroughput(server, protocol, connections, options.bounds)));
          }
        }
        const without = medianFigures(runs.without);
        const withFile = medianFigures(runs.with);
        const cpuOverhead = round(withFile.server_cpu_us_per_call / without.server_cpu_us_per_call - 1, 3);
        cpuPerCall.push(without.server_cpu_us_per_call);
        emit({
          figure: 'tokens_file_checks',
          protocol: protocol.name,
          connections,
          rounds: options.rounds,
          without_file: without,
          with_file: withFile,
          ratio: {
            calls_per_s: ratio(withFile.calls_per_s, without.calls_per_s),
            cpu_per_call: ratio(withFile.server_cpu_us_per_call, without.server_cpu_us_per_call),
          },
          end_to_end_cpu_overhead: cpuOverhead,
        });
      }
    }
    const leanest = Math.min(...cpuPerCall);
    const share = round(cost.checks_ns / 1000 / leanest, 4);
    emit({
      figure: 'tokens_file_check_cost',
      ...cost,
      iterations: options.microIterations,
      tool_call_cpu_us: leanest,
      share_of_tool_call: share,
      target: { max_share: 0.05, met: share <= 0.05 },
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
