import { execFile } from 'child_process';
import { join } from 'path';
import { PROJECT_ROOT } from '../support/built';
import { ConformanceCli, describeOutcome, failureDetails, Outcome, runAll } from '../support/conformance-runner';
import { CONFORMANCE_STDIO_UPSTREAM } from '../support/conformance-stdio-upstream';
import { RunningGateway, startGateway } from '../support/gateway';
import { serversFile, upstreamIn } from '../support/upstreams';

/**
 * The official MCP conformance suite's server scenarios run by its CLI through the gateway's
 * `/mcp`, which federates with no prefix the conformance upstream
 * (test/support/conformance-upstream.ts) started over stdio, its stdout buffered
 * (test/support/conformance-stdio-upstream.ts); test/mcp/mcp-conformance.e2e-spec.ts runs them
 * against it over Streamable HTTP, directly and through the gateway, where all pass. Over stdio
 * an upstream's messages come in the chunks its pipe gives: a call's last progress notification
 * and its answer, written together, came in one, the answer was handled first, and the progress
 * was lost (the CLI saw 2 of the 3 of `tools-call-with-progress`).
 */

const CLI = join(PROJECT_ROOT, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js');
const TOKEN = 'conformance-stdio-token';
const SCENARIO_TIMEOUT_MS = 60_000;
/**
 * One at a time: over stdio, MCP 2025 does not say which call an upstream's log messages and
 * questions belong to, and the gateway relays them only while one call is in flight on that
 * upstream (src/upstream/upstream-callers.ts), so scenarios run together would lose them.
 */
const PARALLEL_RUNS = 1;

/** Scenarios that pass through the gateway over a Streamable HTTP upstream and not over a stdio one: the checks that fail, and why. */
const NOT_OVER_STDIO: Record<string, { checks: string[]; reason: string }> = {};

const CONFORMANCE: ConformanceCli = { node: [CLI], serverOptions: [], timeoutMs: SCENARIO_TIMEOUT_MS };

/** The server scenarios this version of the suite has (active and pending alike). */
async function serverScenarios(): Promise<string[]> {
  const listing = await new Promise<string>((resolve, reject) =>
    execFile(process.execPath, [CLI, 'list', '--server'], (error, stdout) => (error ? reject(error) : resolve(stdout))),
  );
  return [...listing.matchAll(/^\s+- (\S+)$/gm)].map((match) => match[1]);
}

describe('the official MCP conformance suite through the gateway, its upstream over stdio', () => {
  let servers: { path: string; remove(): void };
  let gateway: RunningGateway;
  let url: string;
  let scenarios: string[];
  let outcomes: Map<string, Outcome>;

  beforeAll(async () => {
    servers = serversFile({ conformance: { ...CONFORMANCE_STDIO_UPSTREAM, cwd: PROJECT_ROOT, prefix: '' } });
    gateway = await startGateway({ MCP_SERVERS_FILE: servers.path, AUTH_TOKENS: TOKEN }, []);
    await upstreamIn(gateway, 'conformance', 'connected', 30_000);
    scenarios = await serverScenarios();
    // The CLI cannot send an Authorization header; the gateway takes the token as ?token= too.
    url = gateway.http(`/mcp?token=${TOKEN}`);
    outcomes = await runAll(CONFORMANCE, url, scenarios, PARALLEL_RUNS);
    const rows = scenarios.map((scenario) => `| ${scenario} | ${describeOutcome(outcomes.get(scenario)!)} | ${failureDetails(outcomes.get(scenario)!)} |`);
    console.log(['| scenario | through the gateway, stdio upstream | failing checks |', '| --- | --- | --- |', ...rows].join('\n'));
  }, 300_000);

  afterAll(async () => {
    await gateway?.close();
    servers?.remove();
  });

  it('finds the server scenarios, tools-call-with-progress among them', () => {
    expect(scenarios.length).toBeGreaterThan(20);
    expect(scenarios).toContain('tools-call-with-progress');
  });

  it('passes every scenario, but those in NOT_OVER_STDIO', () => {
    const failing = scenarios.filter((scenario) => !outcomes.get(scenario)!.passed && !(scenario in NOT_OVER_STDIO));
    expect(failing.map((scenario) => `${scenario}: ${failureDetails(outcomes.get(scenario)!)}`)).toEqual([]);
  });

  it('lists in NOT_OVER_STDIO only scenarios that still fail', () => {
    const stale = Object.keys(NOT_OVER_STDIO).filter((scenario) => outcomes.get(scenario)?.passed !== false);
    expect(stale.map((scenario) => `${scenario} now passes over stdio (or is gone): remove it from NOT_OVER_STDIO`)).toEqual([]);
  });

  it("relays every progress notification of a call before the call's answer (tools-call-with-progress)", () => {
    expect(failureDetails(outcomes.get('tools-call-with-progress')!)).toBe('');
  });
});
