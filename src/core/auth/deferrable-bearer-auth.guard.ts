import { ExecutionContext, Injectable } from '@nestjs/common';
import type { WebSocket } from 'ws';
import { GatewayError, GatewayErrorCode } from '../errors/gateway-error';
import { connectionOf } from '../ws/gateway-connection';
import type { UpgradeContext } from '../ws/upgrade-guard';
import { BearerAuthGuard } from './bearer-auth.guard';
import { offersCredential } from './bearer-token';

/**
 * {@link BearerAuthGuard} for protocols that also take the token in a frame after connecting,
 * `{"type":"auth","token":"..."}` (UTCP 0.1; the MCP-over-WebSocket envelope has the same frame):
 * - at the upgrade, a client that offers no credential is let in unauthenticated, while one that
 *   offers a credential has it checked as usual (401/403 before any socket exists);
 * - on frames (`@UseGuards`), an auth frame is checked here, and authenticates the connection or
 *   throws UNAUTHORIZED/FORBIDDEN; any other frame passes only on an authenticated connection.
 *
 * Nest calls a frame's guard as the frame arrives and runs its handler later, after the pipes;
 * checking the token in the guard is what makes the frames sent right behind an auth frame see
 * its outcome.
 */
@Injectable()
export class DeferrableBearerAuthGuard extends BearerAuthGuard {
  override canUpgrade(context: UpgradeContext): void {
    if (this.tokens.enabled && !offersCredential(context.request)) return;
    super.canUpgrade(context);
  }

  override canActivate(context: ExecutionContext): boolean {
    if (context.getType() === 'ws') {
      const ws = context.switchToWs();
      const frame = ws.getData<{ type?: unknown; token?: unknown } | null>();
      const socket = ws.getClient<WebSocket>();
      if (frame?.type === 'auth') {
        this.authenticateFrame(socket, frame.token);
        return true;
      }
      if (connectionOf(socket).principal !== undefined) return true;
      throw new GatewayError(GatewayErrorCode.UNAUTHORIZED, 'Not authenticated: send {"type":"auth","token":"<token>"} first');
    }
    return super.canActivate(context);
  }

  private authenticateFrame(socket: WebSocket, token: unknown): void {
    if (typeof token !== 'string' || token === '') {
      throw new GatewayError(GatewayErrorCode.UNAUTHORIZED, 'An auth frame needs a token: {"type":"auth","token":"<token>"}');
    }
    const result = this.tokens.authenticate(token);
    if (!result.ok) {
      throw new GatewayError(result.status === 401 ? GatewayErrorCode.UNAUTHORIZED : GatewayErrorCode.FORBIDDEN, result.reason);
    }
    connectionOf(socket).principal = result.principal;
  }
}
