import type { GatewayConnection } from '../ws/connection';
import { UpgradeContext, UpgradeRefusedException } from '../ws/upgrade-guard';
import { loadGatewayConfig } from '../../config/gateway-config';
import { ANONYMOUS_PRINCIPAL, AccessTokenService } from './access-token.service';
import { DeferrableBearerAuthGuard } from './deferrable-bearer-auth.guard';
import { MessageAuthenticator } from './message-authenticator';

describe('DeferrableBearerAuthGuard', () => {
  const guardWith = (tokens: string) => {
    const access = new AccessTokenService(loadGatewayConfig({ AUTH_TOKENS: tokens }));
    return new DeferrableBearerAuthGuard(access, new MessageAuthenticator(access));
  };

  /** Runs the upgrade check; its context tells who the connection starts as (the principal). */
  const upgrade = (guard: DeferrableBearerAuthGuard, headers: Record<string, string> = {}, url = '/utcp'): UpgradeContext => {
    const request = { headers, url } as UpgradeContext['request'];
    const context: UpgradeContext = { request, url: new URL(url, 'http://gateway.invalid'), params: {}, protocol: 'utcp' };
    guard.canUpgrade(context);
    return context;
  };

  /** A connection that came in as the upgrade left it. */
  const connectionAfter = (context: UpgradeContext) => {
    const connection = { principal: context.principal, protocol: 'utcp' } as GatewayConnection;
    connection.authenticate = (principal) => void (connection.principal = principal);
    return connection;
  };

  describe('at the upgrade', () => {
    it('lets a client that offers no credential in, unauthenticated', () => {
      expect(upgrade(guardWith('secret')).principal).toBeUndefined();
    });

    it('authenticates a good credential, from a header or the query', () => {
      const guard = guardWith('secret');
      expect(upgrade(guard, { authorization: 'Bearer secret' }).principal).toMatch(/^token:/);
      expect(upgrade(guard, {}, '/utcp?token=secret').principal).toMatch(/^token:/);
    });

    it.each([
      ['a wrong bearer token', { authorization: 'Bearer nope' }, '/utcp', 403],
      ['a wrong query token', {}, '/utcp?token=nope', 403],
      ['another scheme', { authorization: 'Basic dXNlcjpwYXNz' }, '/utcp', 401],
      ['an empty query token', {}, '/utcp?token=', 401],
    ])('refuses %s', (_name, headers, url, status) => {
      const refusal = (() => {
        try {
          upgrade(guardWith('secret'), headers, url);
        } catch (error) {
          return error;
        }
      })();
      expect(refusal).toBeInstanceOf(UpgradeRefusedException);
      expect(refusal).toMatchObject({ status });
    });

    it('lets everyone in as anonymous while auth is off', () => {
      expect(upgrade(guardWith('')).principal).toBe(ANONYMOUS_PRINCIPAL);
    });
  });

  describe('by an auth frame', () => {
    it('authenticates the connection from a good token', () => {
      const guard = guardWith('secret');
      const connection = connectionAfter(upgrade(guard));
      guard.authenticate(connection, 'secret');
      expect(connection.principal).toMatch(/^token:/);
    });

    it.each([
      ['nope', 'FORBIDDEN', /Invalid token/],
      [undefined, 'UNAUTHORIZED', /needs a token/],
      [42, 'UNAUTHORIZED', /needs a token/],
      ['', 'UNAUTHORIZED', /needs a token/],
    ])('refuses the token %o, and the connection stays unauthenticated', (token, code, message) => {
      const guard = guardWith('secret');
      const connection = connectionAfter(upgrade(guard));
      expect(() => guard.authenticate(connection, token)).toThrow(expect.objectContaining({ code, message: expect.stringMatching(message) }));
      expect(connection.principal).toBeUndefined();
    });
  });
});
