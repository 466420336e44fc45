import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host';
import type { WebSocket } from 'ws';
import { loadGatewayConfig } from '../../config/gateway-config';
import { attachConnection, GatewayConnection } from '../ws/gateway-connection';
import { UpgradeRefusedException } from '../ws/upgrade-guard';
import { ANONYMOUS_PRINCIPAL, AccessTokenService } from './access-token.service';
import { DeferrableBearerAuthGuard } from './deferrable-bearer-auth.guard';

describe('DeferrableBearerAuthGuard', () => {
  const guardWith = (tokens: string) =>
    new DeferrableBearerAuthGuard(new AccessTokenService(loadGatewayConfig({ AUTH_TOKENS: tokens })));

  /** Runs the upgrade check; the connection it accepted (its principal tells who it is). */
  const upgrade = (guard: DeferrableBearerAuthGuard, headers: Record<string, string> = {}, url = '/utcp'): GatewayConnection => {
    const request = { headers, url } as GatewayConnection['request'];
    const connection: GatewayConnection = { id: 'c1', route: '/utcp', params: {}, request };
    guard.canUpgrade({ request, url: new URL(url, 'http://gateway.invalid'), params: {}, openConnections: 0, connection });
    return connection;
  };

  /** A frame as a `@UseGuards` guard sees it, on a socket accepted for `connection`. */
  const frameOn = (connection: GatewayConnection, frame: unknown) => {
    const socket = {} as WebSocket;
    attachConnection(socket, connection);
    const context = new ExecutionContextHost([socket, frame]);
    context.setType('ws');
    return context;
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

  describe('on frames', () => {
    it('authenticates the connection from a good auth frame', () => {
      const guard = guardWith('secret');
      const connection = upgrade(guard);
      expect(guard.canActivate(frameOn(connection, { type: 'auth', token: 'secret' }))).toBe(true);
      expect(connection.principal).toMatch(/^token:/);
      expect(guard.canActivate(frameOn(connection, { type: 'call' }))).toBe(true);
    });

    it.each([
      [{ type: 'auth', token: 'nope' }, 'FORBIDDEN', /Invalid token/],
      [{ type: 'auth' }, 'UNAUTHORIZED', /needs a token/],
      [{ type: 'auth', token: 42 }, 'UNAUTHORIZED', /needs a token/],
      [{ type: 'call', id: 1 }, 'UNAUTHORIZED', /Not authenticated/],
      [null, 'UNAUTHORIZED', /Not authenticated/],
    ])('refuses %o on an unauthenticated connection, which stays so', (frame, code, message) => {
      const guard = guardWith('secret');
      const connection = upgrade(guard);
      expect(() => guard.canActivate(frameOn(connection, frame))).toThrow(expect.objectContaining({ code, message: expect.stringMatching(message) }));
      expect(connection.principal).toBeUndefined();
    });
  });
});
