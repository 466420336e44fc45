import { createServer, Server } from 'http';
import type * as GatewayConfigModule from '../../src/config/gateway-config';
import type * as AccessTokenModule from '../../src/core/auth/access-token.service';
import { emit, median, ratio, round } from '../support/stats';
import { fromBuild, measureCheckCost } from './tokens-file-micro';

export interface IdentityOptions {
  /** Checks per batch; batches alternate between the kinds of token, nine each, medians compared. */
  iterations: number;
  /** Distinct JWTs verified from scratch (signature and claims), per algorithm. */
  freshTokens: number;
}

const AUDIENCE = 'https://gateway.bench';
const STATIC_TOKEN = 'bench-static-token';

/** An issuer on 127.0.0.1 serving its OpenID Connect metadata and its keys, as an identity provider does. */
async function startIssuer(jwks: object): Promise<{ url: string; server: Server }> {
  const server = createServer((request, response) => {
    const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    const body = request.url === '/.well-known/openid-configuration' ? { issuer: base, jwks_uri: `${base}/jwks` } : request.url === '/jwks' ? jwks : undefined;
    response.writeHead(body ? 200 : 404, { 'content-type': 'application/json' }).end(JSON.stringify(body ?? {}));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, server };
}

/**
 * What a JWT access token costs the gateway (issue 27's target: under 5% of a tool call), in this
 * process on the real `AccessTokenService` of the build, against an issuer of its own on
 * 127.0.0.1 (keys made here with `jose`):
 * - a check of a JWT already verified (what every HTTP request of a client holding the same token
 *   pays, and a WebSocket connection pays once) beside a static token's check;
 * - a JWT verified from scratch (its signature and claims: once per token per minute at most), per
 *   algorithm;
 * - the catalogue's own call path of a synchronous tool (`tokens-file-micro`), as the yardstick of
 *   "a tool call" that does not drown in the machine's noise.
 */
export async function benchIdentity(options: IdentityOptions): Promise<void> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const jose = require('jose') as typeof import('jose');
  const algorithms = ['RS256', 'ES256'] as const;
  const keys = await Promise.all(algorithms.map((alg) => jose.generateKeyPair(alg)));
  const publicJwks = await Promise.all(
    keys.map(async ({ publicKey }, index) => ({ ...(await jose.exportJWK(publicKey)), alg: algorithms[index], kid: `k${index}` })),
  );
  const issuer = await startIssuer({ keys: publicJwks });
  try {
    const { loadGatewayConfig } = fromBuild<typeof GatewayConfigModule>('config/gateway-config');
    const { AccessTokenService } = fromBuild<typeof AccessTokenModule>('core/auth/access-token.service');
    const config = loadGatewayConfig({ AUTH_TOKENS: STATIC_TOKEN, OIDC_ISSUERS: issuer.url, OIDC_AUDIENCE: AUDIENCE, CLOUD_LOG_LEVEL: 'ERROR' });
    const tokens = new AccessTokenService(config);
    const sign = (index: number, subject: string) =>
      new jose.SignJWT({ scope: 'tools' })
        .setProtectedHeader({ alg: algorithms[index], kid: `k${index}` })
        .setIssuer(issuer.url)
        .setAudience(AUDIENCE)
        .setSubject(subject)
        .setIssuedAt()
        .setExpirationTime('1h')
        .sign(keys[index].privateKey);
    const check = async (token: string) => {
      const result = await tokens.authenticateBearer(token);
      if (!result.ok) throw new Error(`The bench token was refused: ${result.reason}`);
    };

    const held = await sign(0, 'bench-user');
    await check(held);
    const batch = async (token: string): Promise<number> => {
      const started = process.hrtime.bigint();
      for (let i = 0; i < options.iterations; i += 1) await check(token);
      return Number(process.hrtime.bigint() - started) / options.iterations;
    };
    for (let warm = 0; warm < 3; warm += 1) await Promise.all([batch(STATIC_TOKEN), batch(held)]);
    const staticNs: number[] = [];
    const cachedNs: number[] = [];
    for (let run = 0; run < 9; run += 1) {
      staticNs.push(await batch(STATIC_TOKEN));
      cachedNs.push(await batch(held));
    }

    const freshUs: Record<string, number> = {};
    for (const [index, alg] of algorithms.entries()) {
      const fresh = await Promise.all(Array.from({ length: options.freshTokens }, (_, n) => sign(index, `user-${alg}-${n}`)));
      const started = process.hrtime.bigint();
      for (const token of fresh) await check(token);
      freshUs[alg] = round(Number(process.hrtime.bigint() - started) / fresh.length / 1000, 1);
    }

    const toolCallNs = measureCheckCost(
      `tokens:\n  - name: bench\n    token: "${STATIC_TOKEN}-named"\n`,
      `${STATIC_TOKEN}-named`,
      Math.max(2000, options.iterations),
    ).full_access_ns;
    const cachedCheckNs = median(cachedNs);
    const staticCheckNs = median(staticNs);
    emit({
      figure: 'jwt_check_cost',
      iterations: options.iterations,
      static_token_ns: round(staticCheckNs, 0),
      verified_jwt_ns: round(cachedCheckNs, 0),
      jwt_adds_ns: round(cachedCheckNs - staticCheckNs, 0),
      fresh_jwt_us: freshUs,
      catalogue_call_ns: round(toolCallNs, 0),
      ratio: { verified_jwt_to_static: ratio(cachedCheckNs, staticCheckNs) },
    });
  } finally {
    await new Promise((resolve) => issuer.server.close(resolve));
  }
}
