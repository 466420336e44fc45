import { mkdtempSync, rmSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { dirname, join } from 'path';
import type * as GatewayConfigModule from '../../src/config/gateway-config';
import type * as AccessTokenModule from '../../src/core/auth/access-token.service';
import type * as RateLimitModule from '../../src/core/limits/rate-limit.service';
import type * as ToolRegistryModule from '../../src/core/tools/tool-registry.service';
import { PROJECT_ROOT } from '../support/processes';
import { median, round } from '../support/stats';
import { GatewayState } from '../../src/core/state/gateway-state';

/** A module of the gateway build under test (`dist/`, or `BENCH_GATEWAY_MAIN`'s), as the servers run it. */
export function fromBuild<T>(path: string): T {
  const main = process.env.BENCH_GATEWAY_MAIN ?? join(PROJECT_ROOT, 'dist', 'main.js');
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require(join(dirname(main), path)) as T;
}

/** Nanoseconds per call of the catalogue's call path, with and without a named token's checks. */
export interface CheckCost {
  full_access_ns: number;
  named_token_ns: number;
  /** What the tokens file adds to one call: the glob lookup twice, the grant lookups, the rate-limit counter. */
  checks_ns: number;
}

/**
 * The checks a tool call meets with a tokens file, measured in this process on the real classes
 * (no sockets, so the machine's noise hardly touches it): `ToolRegistryService.get`, `prepare`
 * and `run` of a synchronous tool with the principal of an `AUTH_TOKENS` token (no check) and
 * with a named token whose `tools` glob and rate-limit counter run, plus its `admitToolCall`,
 * as a LiteMCP or UTCP call does. Alternating batches, medians.
 */
export function measureCheckCost(tokensFileText: string, token: string, iterations: number): CheckCost {
  const dir = mkdtempSync(join(tmpdir(), 'vtg-bench-micro-'));
  try {
    const path = join(dir, 'tokens.yaml');
    writeFileSync(path, tokensFileText, { mode: 0o600 });
    const { loadGatewayConfig } = fromBuild<typeof GatewayConfigModule>('config/gateway-config');
    const { AccessTokenService } = fromBuild<typeof AccessTokenModule>('core/auth/access-token.service');
    const { RateLimitService } = fromBuild<typeof RateLimitModule>('core/limits/rate-limit.service');
    const { ToolRegistryService } = fromBuild<typeof ToolRegistryModule>('core/tools/tool-registry.service');
    const config = loadGatewayConfig({ AUTH_TOKENS: 'full-access-token', AUTH_TOKENS_FILE: path, CLOUD_LOG_LEVEL: 'ERROR' });
    const tokens = new AccessTokenService(config);
    const registry = new ToolRegistryService(config, undefined, tokens);
    const limits = new RateLimitService(config, tokens, new GatewayState(config));
    registry.register({
      name: 'calculator',
      description: 'Adds',
      inputSchema: { type: 'object' as const, properties: { a: { type: 'number' as const }, b: { type: 'number' as const } }, required: ['a', 'b'] },
      source: 'module',
      handler: ({ a, b }) => (a as number) + (b as number),
    });
    const full = tokens.authenticate('full-access-token');
    const named = tokens.authenticate(token);
    if (!full.ok || !named.ok) throw new Error('The micro-benchmark tokens do not authenticate');
    const args = { a: 2, b: 3 };
    const call = (principal: string, admit: boolean) => {
      if (!registry.get('calculator', undefined, principal)) throw new Error('calculator is not visible');
      if (admit) limits.admitToolCall(principal);
      const outcome = registry.run(registry.prepare('calculator', args, undefined, principal), { principal });
      if (!('ok' in outcome) || !outcome.ok) throw new Error('calculator failed');
    };
    const batch = (principal: string, admit: boolean): number => {
      const started = process.hrtime.bigint();
      for (let i = 0; i < iterations; i += 1) call(principal, admit);
      return Number(process.hrtime.bigint() - started) / iterations;
    };
    for (let warm = 0; warm < 3; warm += 1) {
      batch(full.principal, false);
      batch(named.principal, true);
    }
    const without: number[] = [];
    const withChecks: number[] = [];
    for (let run = 0; run < 9; run += 1) {
      without.push(batch(full.principal, false));
      withChecks.push(batch(named.principal, true));
    }
    registry.onModuleDestroy();
    const fullNs = median(without);
    const namedNs = median(withChecks);
    return { full_access_ns: round(fullNs, 1), named_token_ns: round(namedNs, 1), checks_ns: round(Math.max(0, namedNs - fullNs), 1) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
