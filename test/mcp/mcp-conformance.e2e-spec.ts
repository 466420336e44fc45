import { execFile } from 'child_process';
import { join } from 'path';
import { PROJECT_ROOT } from '../support/built';
import { ConformanceCli, describeOutcome, failureDetails, Outcome, runAll } from '../support/conformance-runner';
import { startConformanceUpstream } from '../support/conformance-upstream';
import { RunningGateway, startGateway } from '../support/gateway';
import { serversFile, upstreamIn } from '../support/upstreams';

/**
 * The official MCP conformance suite's server scenarios (`@modelcontextprotocol/conformance`), run
 * by its CLI against an upstream written for them (test/support/conformance-upstream.ts), once
 * directly and once through the gateway's `/mcp`, which federates that upstream with no prefix.
 * What passes directly and not through the gateway is the gateway's doing.
 */

const CLI = join(PROJECT_ROOT, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js');
const TOKEN = 'conformance-token';
const SCENARIO_TIMEOUT_MS = 60_000;
const PARALLEL_RUNS = 4;

/** Scenarios our upstream does not pass, and why. */
const NOT_PASSED_DIRECTLY: Record<string, string> = {};

/** Scenarios that pass directly and do not pass through the gateway yet: the checks that fail, and the CLI's reason. */
const NOT_YET_THROUGH_GATEWAY: Record<string, { checks: string[]; reason: string }> = {};

/** The server scenarios this version of the suite has (active and pending alike). */
async function serverScenarios(): Promise<string[]> {
  const listing = await new Promise<string>((resolve, reject) =>
    execFile(process.execPath, [CLI, 'list', '--server'], (error, stdout) => (error ? reject(error) : resolve(stdout))),
  );
  return [...listing.matchAll(/^\s+- (\S+)$/gm)].map((match) => match[1]);
}

const CONFORMANCE: ConformanceCli = { node: [CLI], serverOptions: [], timeoutMs: SCENARIO_TIMEOUT_MS };

describe('the official MCP conformance suite, directly and through the gateway', () => {
  let upstream: { url: string; close(): Promise<void> };
  let servers: { path: string; remove(): void };
  let gateway: RunningGateway;
  let scenarios: string[];
  let direct: Map<string, Outcome>;
  let throughGateway: Map<string, Outcome>;

  beforeAll(async () => {
    upstream = await startConformanceUpstream();
    servers = serversFile({ conformance: { url: upstream.url, prefix: '' } });
    gateway = await startGateway({ MCP_SERVERS_FILE: servers.path, AUTH_TOKENS: TOKEN }, []);
    await upstreamIn(gateway, 'conformance', 'connected');
    scenarios = await serverScenarios();

    // The CLI cannot send an Authorization header; the gateway takes the token as ?token= too.
    [direct, throughGateway] = await Promise.all([
      runAll(CONFORMANCE, upstream.url, scenarios, PARALLEL_RUNS),
      runAll(CONFORMANCE, gateway.http(`/mcp?token=${TOKEN}`), scenarios, PARALLEL_RUNS),
    ]);

    const rows = scenarios.map((scenario) => {
      const there = throughGateway.get(scenario)!;
      return `| ${scenario} | ${describeOutcome(direct.get(scenario)!)} | ${describeOutcome(there)} | ${failureDetails(there)} |`;
    });
    console.log(['| scenario | direct | through the gateway | failing checks through the gateway |', '| --- | --- | --- | --- |', ...rows].join('\n'));
  }, 300_000);

  afterAll(async () => {
    await gateway?.close();
    await upstream?.close();
    servers?.remove();
  });

  it('finds the server scenarios', () => {
    expect(scenarios.length).toBeGreaterThan(20);
  });

  it('takes the token as ?token= on Streamable HTTP, which is how the CLI reaches it', async () => {
    const initialize = (path: string) =>
      fetch(gateway.http(path), {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'probe', version: '1' } },
        }),
      });
    expect((await initialize('/mcp')).status).toBe(401);
    expect((await initialize(`/mcp?token=${TOKEN}`)).status).toBe(200);
  });

  it('passes every scenario directly, but those in NOT_PASSED_DIRECTLY', () => {
    const failing = scenarios.filter((scenario) => !direct.get(scenario)!.passed && !(scenario in NOT_PASSED_DIRECTLY));
    expect(failing.map((scenario) => `${scenario}: ${failureDetails(direct.get(scenario)!)}`)).toEqual([]);
    const stale = Object.keys(NOT_PASSED_DIRECTLY).filter((scenario) => direct.get(scenario)?.passed !== false);
    expect(stale.map((scenario) => `${scenario} now passes directly (or is gone): remove it from NOT_PASSED_DIRECTLY`)).toEqual([]);
  });

  it('passes through the gateway every scenario that passes directly, but those in NOT_YET_THROUGH_GATEWAY', () => {
    const failing = scenarios.filter(
      (scenario) => direct.get(scenario)!.passed && !throughGateway.get(scenario)!.passed && !(scenario in NOT_YET_THROUGH_GATEWAY),
    );
    expect(failing.map((scenario) => `${scenario}: ${failureDetails(throughGateway.get(scenario)!)}`)).toEqual([]);
  });

  it('lists in NOT_YET_THROUGH_GATEWAY only scenarios that still fail through the gateway', () => {
    const stale = Object.keys(NOT_YET_THROUGH_GATEWAY).filter((scenario) => throughGateway.get(scenario)?.passed !== false);
    expect(stale.map((scenario) => `${scenario} now passes through the gateway (or is gone): remove it from NOT_YET_THROUGH_GATEWAY`)).toEqual([]);
  });
});
