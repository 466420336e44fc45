import { execFile } from 'child_process';
import { createServer, request as httpRequest, Server } from 'http';
import type { AddressInfo } from 'net';
import { join } from 'path';
import { pathToFileURL } from 'url';
import { PROJECT_ROOT } from '../support/built';
import { ConformanceCli, describeOutcome, failureDetails, Outcome, runAll, runScenario } from '../support/conformance-runner';
import { startConformanceUpstream2026 } from '../support/conformance-upstream-2026';
import { RunningGateway, startGateway } from '../support/gateway';
import { serversFile, upstreamIn } from '../support/upstreams';

/**
 * The official MCP conformance suite's server scenarios for MCP's 2026-07-28 revision
 * (`@modelcontextprotocol/conformance` 0.2.x, installed as `conformance-2026`), run by its CLI at
 * that revision's wire (`--spec-version 2026-07-28`: no `initialize`, a `_meta` envelope on every
 * request) against an upstream written for them with the SDK 2.x
 * (test/support/conformance-upstream-2026.ts), once directly and once through the gateway's
 * `/mcp`, which federates another instance of that upstream with no prefix. What passes directly
 * and not through the gateway is the gateway's doing. test/mcp/mcp-conformance.e2e-spec.ts runs
 * the 2025 revisions with the suite's 0.1.x.
 *
 * The CLI's bundle needs Node 22 (`fs.globSync`); on Node 20 it runs with the loader of
 * test/support/conformance-node20/ (`node --import`), which goes when Node 22 is the floor.
 */

const CLI = join(PROJECT_ROOT, 'node_modules', 'conformance-2026', 'dist', 'index.js');
const NODE20_SHIM = pathToFileURL(join(PROJECT_ROOT, 'test', 'support', 'conformance-node20', 'register.mjs')).href;
const SPEC_VERSION = '2026-07-28';
const TOKEN = 'conformance-token';
/** The CLI's own limit for one scenario, and ours for its process (startup and writing the results on top). */
const CLI_TIMEOUT_MS = 30_000;
const SCENARIO_TIMEOUT_MS = 45_000;
const PARALLEL_RUNS = 3;
/**
 * Scenarios run first, alone (directly and through the gateway at once), before the parallel runs
 * load the machine: server-stateless reads its streams with deadlines of 0.5 to 1.5 s.
 */
const ALONE_FIRST = ['server-stateless'];

/** Scenarios our upstream does not pass, and why. */
const NOT_PASSED_DIRECTLY: Record<string, string> = {};

/** Scenarios that pass directly and do not pass through the gateway yet: the checks that fail, and the CLI's reason. */
const NOT_YET_THROUGH_GATEWAY: Record<string, { checks: string[]; reason: string }> = {};

/**
 * A proxy on 127.0.0.1 port 0 in front of the gateway that adds its bearer token to every request,
 * as a client configured with the token would: the CLI cannot send an Authorization header, and
 * the scenarios that send raw requests (http-header-validation...) drop a `?token=` from the URL.
 * Requests and answers (SSE streams too) pass through as they are, Host and Origin included.
 */
async function withToken(target: string, token: string): Promise<{ url: string; close(): Promise<void> }> {
  const upstream = new URL(target);
  const proxy: Server = createServer((incoming, outgoing) => {
    const forwarded = httpRequest(
      {
        hostname: upstream.hostname,
        port: upstream.port,
        path: incoming.url,
        method: incoming.method,
        headers: { ...incoming.headers, authorization: `Bearer ${token}` },
      },
      (answer) => {
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(outgoing);
      },
    );
    forwarded.on('error', () => outgoing.destroy());
    outgoing.on('close', () => forwarded.destroy());
    incoming.pipe(forwarded);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}${upstream.pathname}`,
    close: async () => {
      proxy.closeAllConnections();
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
    },
  };
}

/** The server scenarios that apply to 2026-07-28 (pending ones too), with the revisions each applies to. */
async function serverScenarios(): Promise<Map<string, string>> {
  const listing = await new Promise<string>((resolve, reject) =>
    execFile(process.execPath, [...CONFORMANCE.node, 'list', '--server', '--spec-version', SPEC_VERSION], (error, stdout) =>
      error ? reject(error) : resolve(stdout),
    ),
  );
  return new Map([...listing.matchAll(/^\s+- (\S+)(?: \[(.*)\])?$/gm)].map((match) => [match[1], match[2] ?? '']));
}

const CONFORMANCE: ConformanceCli = {
  node: ['--import', NODE20_SHIM, CLI],
  serverOptions: ['--spec-version', SPEC_VERSION, '--timeout', String(CLI_TIMEOUT_MS)],
  timeoutMs: SCENARIO_TIMEOUT_MS,
};

describe(`the official MCP conformance suite at ${SPEC_VERSION}, directly and through the gateway`, () => {
  let direct: { url: string; close(): Promise<void> };
  let federated: { url: string; close(): Promise<void> };
  let servers: { path: string; remove(): void };
  let gateway: RunningGateway;
  let proxy: { url: string; close(): Promise<void> };
  let listed: Map<string, string>;
  let scenarios: string[];
  let outcomes: { direct: Map<string, Outcome>; throughGateway: Map<string, Outcome> };

  beforeAll(async () => {
    // One upstream each: a scenario that changes the tool list directly must not change the gateway's.
    [direct, federated] = await Promise.all([startConformanceUpstream2026(), startConformanceUpstream2026()]);
    servers = serversFile({ conformance: { url: federated.url, prefix: '' } });
    gateway = await startGateway({ MCP_SERVERS_FILE: servers.path, AUTH_TOKENS: TOKEN }, []);
    await upstreamIn(gateway, 'conformance', 'connected');
    proxy = await withToken(gateway.http('/mcp'), TOKEN);
    listed = await serverScenarios();
    scenarios = [...listed.keys()];

    const started = Date.now();
    outcomes = { direct: new Map(), throughGateway: new Map() };
    for (const scenario of ALONE_FIRST.filter((name) => listed.has(name))) {
      const [there, through] = await Promise.all([runScenario(CONFORMANCE, direct.url, scenario), runScenario(CONFORMANCE, proxy.url, scenario)]);
      outcomes.direct.set(scenario, there);
      outcomes.throughGateway.set(scenario, through);
    }
    const rest = scenarios.filter((scenario) => !ALONE_FIRST.includes(scenario));
    await Promise.all([
      runAll(CONFORMANCE, direct.url, rest, PARALLEL_RUNS, outcomes.direct),
      runAll(CONFORMANCE, proxy.url, rest, PARALLEL_RUNS, outcomes.throughGateway),
    ]);

    const rows = scenarios.map((scenario) => {
      const throughGateway = outcomes.throughGateway.get(scenario)!;
      const only = listed.get(scenario) === SPEC_VERSION ? ' (2026 only)' : '';
      return `| ${scenario}${only} | ${describeOutcome(outcomes.direct.get(scenario)!)} | ${describeOutcome(throughGateway)} | ${failureDetails(throughGateway)} |`;
    });
    const header = ['| scenario | direct | through the gateway | failing checks through the gateway |', '| --- | --- | --- | --- |'];
    console.log([...header, ...rows, '', `${scenarios.length} scenarios, run twice in ${Math.round((Date.now() - started) / 1000)} s`].join('\n'));
  }, 280_000);

  afterAll(async () => {
    await proxy?.close();
    await gateway?.close();
    await Promise.all([direct?.close(), federated?.close()]);
    servers?.remove();
  });

  it(`finds the server scenarios of ${SPEC_VERSION}, on Node 20 too`, () => {
    expect(scenarios.length).toBeGreaterThan(30);
    expect(scenarios).toEqual(expect.arrayContaining(['server-stateless', 'caching', 'input-required-result-basic-elicitation', 'tools-call-simple-text']));
  });

  it('passes every scenario directly, but those in NOT_PASSED_DIRECTLY', () => {
    const failing = scenarios.filter((scenario) => !outcomes.direct.get(scenario)!.passed && !(scenario in NOT_PASSED_DIRECTLY));
    expect(failing.map((scenario) => `${scenario}: ${failureDetails(outcomes.direct.get(scenario)!)}`)).toEqual([]);
    const stale = Object.keys(NOT_PASSED_DIRECTLY).filter((scenario) => outcomes.direct.get(scenario)?.passed !== false);
    expect(stale.map((scenario) => `${scenario} now passes directly (or is gone): remove it from NOT_PASSED_DIRECTLY`)).toEqual([]);
  });

  it('passes through the gateway every scenario that passes directly, but those in NOT_YET_THROUGH_GATEWAY', () => {
    const failing = scenarios.filter(
      (scenario) => outcomes.direct.get(scenario)!.passed && !outcomes.throughGateway.get(scenario)!.passed && !(scenario in NOT_YET_THROUGH_GATEWAY),
    );
    expect(failing.map((scenario) => `${scenario}: ${failureDetails(outcomes.throughGateway.get(scenario)!)}`)).toEqual([]);
  });

  it('lists in NOT_YET_THROUGH_GATEWAY only scenarios that still fail through the gateway, on the checks it names', () => {
    const stale = Object.keys(NOT_YET_THROUGH_GATEWAY).filter((scenario) => outcomes.throughGateway.get(scenario)?.passed !== false);
    expect(stale.map((scenario) => `${scenario} now passes through the gateway (or is gone): remove it from NOT_YET_THROUGH_GATEWAY`)).toEqual([]);
    const changed = Object.entries(NOT_YET_THROUGH_GATEWAY)
      .filter(([scenario]) => outcomes.throughGateway.get(scenario)?.passed === false)
      .filter(([scenario, { checks }]) => {
        const failing = [...new Set(outcomes.throughGateway.get(scenario)!.failures.map((check) => check.id))].sort();
        return failing.join() !== [...checks].sort().join();
      })
      .map(([scenario]) => `${scenario} fails other checks now: ${failureDetails(outcomes.throughGateway.get(scenario)!)}`);
    expect(changed).toEqual([]);
  });
});
