import { createServer, type Server } from 'http';
import type { AddressInfo } from 'net';
import { exportJWK, generateKeyPair, type JWK, type KeyLike, SignJWT } from 'jose';
import { JwtAccessTokens, looksLikeJwt, oidcPrincipal, OidcSettings, scopesOf } from './jwt-access-tokens';

interface Key {
  privateKey: KeyLike;
  jwk: JWK;
}

async function newKey(kid: string): Promise<Key> {
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  return { privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' } };
}

describe('JwtAccessTokens', () => {
  let server: Server;
  let issuer: string;
  let published: Key[];
  let jwksFetches = 0;
  let jwksDown = false;

  beforeAll(async () => {
    published = [await newKey('one')];
    server = createServer((request, response) => {
      response.setHeader('content-type', 'application/json');
      if (request.url === '/.well-known/openid-configuration') response.end(JSON.stringify({ issuer, jwks_uri: `${issuer}/jwks` }));
      else if (request.url === '/jwks') {
        jwksFetches++;
        if (jwksDown) return void response.writeHead(503).end('{}');
        response.end(JSON.stringify({ keys: published.map((key) => key.jwk) }));
      } else response.writeHead(404).end('{}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const settings = (overrides: Partial<OidcSettings> = {}): OidcSettings => ({
    issuers: [issuer],
    audiences: ['http://gateway.test'],
    algorithms: ['ES256', 'RS256'],
    clockSkewSeconds: 0,
    fetchTimeoutMs: 1000,
    jwksCooldownMs: 0,
    scopes: [],
    ...overrides,
  });

  const sign = (key: Key, claims: Record<string, unknown> = {}) =>
    new SignJWT({
      sub: 'alice',
      scope: 'tools:read tools:call',
      iss: issuer,
      aud: 'http://gateway.test',
      iat: Math.floor(Date.now() / 1000),
      exp: Math.floor(Date.now() / 1000) + 300,
      ...claims,
    })
      .setProtectedHeader({ alg: 'ES256', kid: key.jwk.kid })
      .sign(key.privateKey);

  it('accepts a good token: principal from issuer and sub, scopes, expiry', async () => {
    const verified = await new JwtAccessTokens(settings()).verify(await sign(published[0]));
    expect(verified).toMatchObject({ ok: true, principal: oidcPrincipal(issuer, 'alice'), issuer });
    if (verified.ok) {
      expect([...verified.scopes]).toEqual(['tools:read', 'tools:call']);
      expect(verified.expiresAt).toBeGreaterThan(Date.now());
    }
  });

  it('picks up a new key (kid miss), fetching again at most once per cooldown', async () => {
    const tokens = new JwtAccessTokens(settings({ jwksCooldownMs: 60_000 }));
    expect((await tokens.verify(await sign(published[0]))).ok).toBe(true);
    const rotated = await newKey('two');
    published = [rotated, ...published];
    const fetches = jwksFetches;
    // The first fetch was just now: within the cooldown, the unknown kid is refused without a fetch.
    expect(await tokens.verify(await sign(rotated))).toEqual({ ok: false, reason: 'Invalid token: signed with a key its issuer does not have' });
    expect(jwksFetches).toBe(fetches);
    const eager = new JwtAccessTokens(settings());
    expect((await eager.verify(await sign(published[1]))).ok).toBe(true);
    expect((await eager.verify(await sign(rotated))).ok).toBe(true);
  });

  it('keeps using the keys it has while the key endpoint is down, and refuses unknown keys', async () => {
    const tokens = new JwtAccessTokens(settings());
    const token = await sign(published[0], { exp: Math.floor(Date.now() / 1000) + 3600 });
    expect((await tokens.verify(token)).ok).toBe(true);
    jwksDown = true;
    const now = Date.now();
    const later = jest.spyOn(Date, 'now').mockReturnValue(now + 11 * 60_000); // the cache is stale: a refetch is due
    try {
      const fetches = jwksFetches;
      expect((await tokens.verify(token)).ok).toBe(true);
      expect(jwksFetches).toBeGreaterThan(fetches);
      const unknown = await newKey('never-published');
      expect(await tokens.verify(await sign(unknown, { exp: Math.floor(Date.now() / 1000) + 3600 }))).toMatchObject({ ok: false });
    } finally {
      later.mockRestore();
      jwksDown = false;
    }
  });

  it.each([
    ['another audience', { aud: 'http://elsewhere.test' }, 'issued for another audience'],
    ['expired', { exp: Math.floor(Date.now() / 1000) - 10 }, 'expired'],
    ['not yet valid', { nbf: Math.floor(Date.now() / 1000) + 60 }, 'not yet valid'],
  ])('refuses %s', async (_name, claims, reason) => {
    expect(await new JwtAccessTokens(settings()).verify(await sign(published[0], claims))).toEqual({ ok: false, reason: `Invalid token: ${reason}` });
  });

  it('keeps a verification for a minute at most and never past exp; refusals are not kept', async () => {
    const tokens = new JwtAccessTokens(settings());
    const token = await sign(published[0], { exp: Math.floor(Date.now() / 1000) + 120 });
    const first = await tokens.verify(token);
    expect(first).toMatchObject({ ok: true });
    expect(await tokens.verify(token)).toBe(first);
    const now = Date.now();
    const clock = jest.spyOn(Date, 'now');
    try {
      clock.mockReturnValue(now + 61_000);
      const again = await tokens.verify(token);
      expect(again).toMatchObject({ ok: true });
      expect(again).not.toBe(first);
    } finally {
      clock.mockRestore();
    }
    const brief = await sign(published[0], { exp: Math.floor(Date.now() / 1000) + 1 });
    expect(await tokens.verify(brief)).toMatchObject({ ok: true });
    await new Promise((resolve) => setTimeout(resolve, 2100));
    expect(await tokens.verify(brief)).toMatchObject({ ok: false });
    const bad = `${token.slice(0, -4)}AAAA`;
    const refused = await tokens.verify(bad);
    expect(refused).toMatchObject({ ok: false });
    expect(await tokens.verify(bad)).not.toBe(refused);
  });

  it('refuses an untrusted issuer without fetching anything', async () => {
    const fetchImpl = jest.fn();
    const tokens = new JwtAccessTokens(settings(), fetchImpl as unknown as typeof fetch);
    const token = await new SignJWT({ sub: 'x' })
      .setProtectedHeader({ alg: 'ES256' })
      .setIssuer('http://evil.test')
      .setAudience('http://gateway.test')
      .sign(published[0].privateKey);
    expect(await tokens.verify(token)).toEqual({ ok: false, reason: 'Invalid token: its issuer is not trusted' });
    expect(fetchImpl).not.toHaveBeenCalled();
  });

  it('refuses an algorithm that is not allowed', async () => {
    const tokens = new JwtAccessTokens(settings({ algorithms: ['RS256'] }));
    expect(await tokens.verify(await sign(published[0]))).toEqual({ ok: false, reason: 'Invalid token: signed with an algorithm that is not allowed' });
  });

  it('tells JWTs from other tokens', () => {
    expect(looksLikeJwt('plain-static-token')).toBe(false);
    expect(looksLikeJwt('a.b.c')).toBe(false);
    expect(looksLikeJwt(`${Buffer.from('{"alg":"RS256"}').toString('base64url')}.e30.sig`)).toBe(true);
    expect(looksLikeJwt(`${Buffer.from('{"alg":"RS256"}').toString('base64url')}.e30.sig.more`)).toBe(false);
  });

  it('reads scope and scp', () => {
    expect([...scopesOf({ scope: 'a b' })]).toEqual(['a', 'b']);
    expect([...scopesOf({ scp: ['c', 'd'] })]).toEqual(['c', 'd']);
    expect(scopesOf({}).size).toBe(0);
  });
});
