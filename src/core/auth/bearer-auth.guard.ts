import { CanActivate, ExecutionContext, ForbiddenException, Injectable, UnauthorizedException } from '@nestjs/common';
import type { IncomingMessage } from 'http';
import { UpgradeContext, UpgradeGuard, UpgradeRefusedException } from '../ws/upgrade-guard';
import { AccessTokenService, SHARED_REALM } from './access-token.service';
import { readBearerToken } from './bearer-token';

/** An HTTP request after {@link BearerAuthGuard} let it through. */
export interface AuthenticatedRequest extends IncomingMessage {
  principal?: string;
}

/**
 * Bearer auth for every protocol, one guard, checked once per connection or request:
 * - at a WebSocket upgrade (`upgradeGuards`), so a refused client gets 401/403 and no socket,
 *   and the connection starts with its principal, which its frames only read;
 * - on HTTP routes (`@UseGuards`), answering 401/403.
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
    context.principal = result.principal;
  }

  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<AuthenticatedRequest>();
    const result = this.tokens.authenticate(readBearerToken(request), this.realm);
    if (!result.ok) {
      throw result.status === 401 ? new UnauthorizedException(result.reason) : new ForbiddenException(result.reason);
    }
    request.principal = result.principal;
    return true;
  }
}
