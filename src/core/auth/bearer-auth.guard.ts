import {
  CanActivate,
  ExecutionContext,
  ForbiddenException,
  Injectable,
  UnauthorizedException,
} from '@nestjs/common';
import type { IncomingMessage } from 'http';
import type { WebSocket } from 'ws';
import { GatewayError, GatewayErrorCode } from '../errors/gateway-error';
import { connectionOf } from '../ws/gateway-connection';
import { UpgradeContext, UpgradeGuard, UpgradeRefusedException } from '../ws/upgrade-guard';
import { AccessTokenService, SHARED_REALM } from './access-token.service';
import { readBearerToken } from './bearer-token';

/** An HTTP request after {@link BearerAuthGuard} let it through. */
export interface AuthenticatedRequest extends IncomingMessage {
  principal?: string;
}

/**
 * Bearer auth for every protocol, one guard:
 * - at a WebSocket upgrade (`upgradeGuards`), so a refused client gets 401/403 and no socket;
 * - on HTTP routes (`@UseGuards`), answering 401/403;
 * - on WebSocket messages (`@UseGuards` on a gateway), letting through only connections whose
 *   principal was established, at the upgrade or by a protocol's own auth frame.
 *
 * It checks the shared realm; a protocol with a realm of its own extends it and overrides
 * {@link realm} (see `AccessTokenService.defineRealm`).
 */
@Injectable()
export class BearerAuthGuard implements CanActivate, UpgradeGuard {
  /** The token realm this guard checks. */
  protected readonly realm: string = SHARED_REALM;

  constructor(protected readonly tokens: AccessTokenService) {}

  canUpgrade(context: UpgradeContext): void {
    const result = this.tokens.authenticate(readBearerToken(context.request), this.realm);
    if (!result.ok) {
      const headers: Record<string, string> = result.status === 401 ? { 'WWW-Authenticate': 'Bearer' } : {};
      throw new UpgradeRefusedException(result.status, result.reason, headers);
    }
    context.connection.principal = result.principal;
  }

  canActivate(context: ExecutionContext): boolean {
    if (context.getType() === 'ws') {
      if (connectionOf(context.switchToWs().getClient<WebSocket>()).principal !== undefined) return true;
      throw new GatewayError(GatewayErrorCode.UNAUTHORIZED, 'Not authenticated');
    }
    const request = context.switchToHttp().getRequest<AuthenticatedRequest>();
    const result = this.tokens.authenticate(readBearerToken(request), this.realm);
    if (!result.ok) {
      throw result.status === 401 ? new UnauthorizedException(result.reason) : new ForbiddenException(result.reason);
    }
    request.principal = result.principal;
    return true;
  }
}
