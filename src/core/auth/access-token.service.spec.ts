import { loadGatewayConfig } from '../../config/gateway-config';
import { ProtocolRegistry } from '../protocols/protocol-registry';
import { ANONYMOUS_PRINCIPAL, AccessTokenService } from './access-token.service';
import { offersCredential, readBearerToken } from './bearer-token';

describe('AccessTokenService', () => {
  const withTokens = (tokens: string) => new AccessTokenService(loadGatewayConfig({ AUTH_TOKENS: tokens }));

  it('lets everyone in as anonymous while no token is configured', () => {
    const service = withTokens('');
    expect(service.enabled).toBe(false);
    expect(service.authenticate(undefined)).toEqual({ ok: true, principal: ANONYMOUS_PRINCIPAL });
  });

  it('answers 401 without a token and 403 with a wrong one', () => {
    const service = withTokens('alpha,beta');
    expect(service.authenticate(undefined)).toMatchObject({ ok: false, status: 401 });
    expect(service.authenticate('')).toMatchObject({ ok: false, status: 401 });
    expect(service.authenticate('alph')).toMatchObject({ ok: false, status: 403 });
    expect(service.authenticate('alphaX')).toMatchObject({ ok: false, status: 403 });
  });

  it('accepts every configured token, each with its own stable principal that is not the token', () => {
    const service = withTokens('alpha,beta');
    const alpha = service.authenticate('alpha');
    const beta = service.authenticate('beta');
    expect(alpha).toMatchObject({ ok: true, principal: expect.stringMatching(/^token:[0-9a-f]{16}$/) });
    expect(alpha.ok && beta.ok && alpha.principal !== beta.principal).toBe(true);
    expect(withTokens('beta,alpha').authenticate('alpha')).toEqual(alpha);
    expect(JSON.stringify(alpha)).not.toContain('alpha"');
  });
});

describe('AccessTokenService: device secrets at an upgrade', () => {
  const known = { deviceId: 'aa:bb', principal: 'name:alice' };
  const service = () => {
    const tokens = new AccessTokenService(loadGatewayConfig({ AUTH_TOKENS: 'alpha' }));
    tokens.useDeviceCredentials(async (secret) => (secret === 'dev_right' ? known : undefined));
    tokens.acceptDeviceCredentialsOn('xiaozhi');
    return tokens;
  };

  it("accepts a device's own secret on a device protocol, as its owner restricted to the device", async () => {
    expect(await service().authenticateUpgrade('dev_right', 'shared', 'xiaozhi')).toEqual({ ok: true, principal: 'name:alice', device: 'aa:bb' });
    expect(await service().authenticateUpgrade('dev_wrong', 'shared', 'xiaozhi')).toMatchObject({ ok: false, status: 403 });
  });

  it('treats it as an unknown token anywhere else: other protocols, HTTP routes, messages', async () => {
    expect(await service().authenticateUpgrade('dev_right', 'shared', 'llm')).toMatchObject({ ok: false, status: 403 });
    expect(await service().authenticateBearer('dev_right')).toMatchObject({ ok: false, status: 403 });
  });

  it('keeps static tokens working beside it, and refuses (does not crash) when the store fails', async () => {
    expect(await service().authenticateUpgrade('alpha', 'shared', 'xiaozhi')).toMatchObject({ ok: true, principal: expect.stringMatching(/^token:/) });
    const failing = new AccessTokenService(loadGatewayConfig({ AUTH_TOKENS: 'alpha' }));
    failing.useDeviceCredentials(() => Promise.reject(new Error('Redis is down')));
    failing.acceptDeviceCredentialsOn('xiaozhi');
    expect(await failing.authenticateUpgrade('dev_right', 'shared', 'xiaozhi')).toMatchObject({ ok: false, status: 403 });
  });
});

describe('AccessTokenService with OIDC_ISSUERS', () => {
  const protocols = new ProtocolRegistry();
  protocols.declare({ name: 'mcp', protectedResource: '/mcp' });
  const service = (settings: Record<string, string> = {}) =>
    new AccessTokenService(loadGatewayConfig({ OIDC_ISSUERS: 'https://idp.test/realms/main', PUBLIC_URL: 'https://gateway.test/', ...settings }), protocols);
  const jwtShaped = `${Buffer.from('{"alg":"RS256"}').toString('base64url')}.${Buffer.from('{"iss":"https://evil.test","sub":"x"}').toString('base64url')}.c2ln`;

  it('turns auth on, answers static tokens at once, and an unknown one with 401 invalid_token', () => {
    const tokens = service({ AUTH_TOKENS: 'alpha' });
    expect(tokens.enabled).toBe(true);
    expect(tokens.authenticateBearer('alpha')).toMatchObject({ ok: true, principal: expect.stringMatching(/^token:/) });
    expect(tokens.authenticateBearer('nope')).toEqual({ ok: false, status: 401, reason: 'Invalid token', error: 'invalid_token' });
    expect(tokens.authenticateBearer(undefined)).toMatchObject({ ok: false, status: 401 });
  });

  it('checks a JWT-shaped token as a JWT: one from an untrusted issuer is refused, never taken for a static token', async () => {
    const tokens = service({ AUTH_TOKENS: jwtShaped });
    const result = tokens.authenticateBearer(jwtShaped);
    expect(result).toBeInstanceOf(Promise);
    expect(await result).toEqual({ ok: false, status: 401, reason: 'Invalid token: its issuer is not trusted', error: 'invalid_token' });
  });

  it("words the challenges of RFC 6750 and RFC 9728, pointing at a protocol's own protected resource under its path", () => {
    const tokens = service();
    expect(tokens.challenge(undefined, '/mcp', 'x')).toBe('Bearer resource_metadata="https://gateway.test/.well-known/oauth-protected-resource/mcp"');
    expect(tokens.challenge(undefined, '/mcp/devices/d1', 'x')).toBe(
      'Bearer resource_metadata="https://gateway.test/.well-known/oauth-protected-resource/mcp"',
    );
    expect(tokens.challenge(undefined, '/mcpx', 'x')).toBe('Bearer resource_metadata="https://gateway.test/.well-known/oauth-protected-resource"');
    expect(tokens.challenge('invalid_token', '/tools', 'x')).toBe(
      'Bearer resource_metadata="https://gateway.test/.well-known/oauth-protected-resource", error="invalid_token"',
    );
    expect(tokens.challenge('insufficient_scope', '/mcp', 'x', 'a b')).toBe(
      'Bearer resource_metadata="https://gateway.test/.well-known/oauth-protected-resource/mcp", error="insufficient_scope", scope="a b"',
    );
    expect(withoutOidc().challenge('invalid_token', '/mcp', 'x')).toBe('Bearer error="invalid_token"');
  });

  it('gives a JWT principal it has not seen what an AUTH_TOKENS token gets while there are no rules', () => {
    expect(service().grantOf('oidc:0123456789abcdef01234567').mayUseTool('anything')).toBe(true);
  });

  const withoutOidc = () => new AccessTokenService(loadGatewayConfig({ AUTH_TOKENS: 'alpha' }));
});

describe('readBearerToken', () => {
  const request = (headers: Record<string, string>, url = '/') => ({ headers, url });

  it.each([
    [{ authorization: 'Bearer abc' }, '/', 'abc'],
    [{ authorization: 'bearer   abc ' }, '/', 'abc'],
    [{ authentication: 'Bearer abc' }, '/', 'abc'],
    [{}, '/utcp?token=abc', 'abc'],
    [{}, '/utcp?x=1&token=a%20b', 'a b'],
    [{ authorization: 'Basic abc' }, '/', undefined],
    [{}, '/', undefined],
    [{}, '/?token=', undefined],
  ])('reads %o %s', (headers, url, token) => {
    expect(readBearerToken(request(headers, url))).toBe(token);
  });

  it('prefers the Authorization header over the query', () => {
    expect(readBearerToken(request({ authorization: 'Bearer header' }, '/?token=query'))).toBe('header');
  });
});

describe('AccessTokenService realms', () => {
  const service = (tokens: string) => new AccessTokenService(loadGatewayConfig({ AUTH_TOKENS: tokens }));

  it('accepts the shared tokens and its own in a defined realm, with the same principal as the shared realm', () => {
    const tokens = service('alpha');
    tokens.defineRealm('mcp', ['gamma']);
    expect(tokens.authenticate('gamma', 'mcp')).toMatchObject({ ok: true });
    expect(tokens.authenticate('alpha', 'mcp')).toEqual(tokens.authenticate('alpha'));
    expect(tokens.authenticate('gamma')).toMatchObject({ ok: false, status: 403 });
    expect(tokens.authenticate('delta', 'mcp')).toMatchObject({ ok: false, status: 403 });
    expect(tokens.authenticate(undefined, 'mcp')).toMatchObject({ ok: false, status: 401 });
  });

  it('never lets anyone into a defined realm without tokens, while the shared realm stays open', () => {
    const tokens = service('');
    tokens.defineRealm('mcp', []);
    expect(tokens.authenticate(undefined)).toEqual({ ok: true, principal: ANONYMOUS_PRINCIPAL });
    expect(tokens.authenticate(undefined, 'mcp')).toMatchObject({ ok: false, status: 401 });
    expect(tokens.authenticate('anything', 'mcp')).toMatchObject({ ok: false, status: 403 });
  });

  it('refuses to check a realm nobody defined', () => {
    expect(() => service('').authenticate('x', 'nowhere')).toThrow(/Unknown token realm "nowhere"/);
  });
});

describe('offersCredential', () => {
  it.each([
    [{ authorization: 'Bearer abc' }, '/', true],
    [{ authorization: 'Basic abc' }, '/', true],
    [{ authentication: '' }, '/', true],
    [{}, '/utcp?token=', true],
    [{}, '/utcp?stream=true', false],
    [{}, '/utcp', false],
  ])('%o %s -> %s', (headers, url, offered) => {
    expect(offersCredential({ headers, url })).toBe(offered);
  });
});
