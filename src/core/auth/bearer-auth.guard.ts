import { CanActivate, ExecutionContext, ForbiddenException, Inject, Injectable, Optional, UnauthorizedException } from '@nestjs/common';
import type { IncomingMessage } from 'http';
import type { ServerResponse } from 'http';
import { isPromise, type MaybePromise } from '../maybe-promise';
import { UpgradeContext, UpgradeGuard, UpgradeRefusedException } from '../ws/upgrade-guard';
import { AccessTokenService, AuthenticationResult, SHARED_REALM } from './access-token.service';
import { readBearerToken } from './bearer-token';
import { markDeviceCredential } from './device-credential';
import { gatewayProtocolOf, requiresFullAccess } from './gateway-protocol.decorator';
import { hasFullAccess, protocolRefusal } from './grant';
import { TokenExpiryService } from './token-expiry.service';

/** An HTTP request after {@link BearerAuthGuard} let it through. */
export interface AuthenticatedRequest extends IncomingMessage {
  principal?: string;
}

/** Why a principal may not open a connection of `protocol`; `undefined` when it may. */
export interface AdmissionRefusal {
  status: 403;
  reason: string;
}

/**
 * Bearer auth for every protocol, one guard, checked once per connection or request:
 * - at a WebSocket upgrade (`upgradeGuards`), so a refused client gets 401/403 and no socket,
 *   and the connection starts with its principal, which its frames only read;
 * - on HTTP routes (`@UseGuards`), answering 401/403.
 *
 * A named token of the tokens file is also held to its `protocols` (403 at the upgrade or on the
 * controller marked `@GatewayProtocol`).
 *
 * It checks the shared realm; a protocol with a realm of its own extends it and overrides
 * {@link realm} (see `AccessTokenService.defineRealm`).
 */
@Injectable()
export class BearerAuthGuard implements CanActivate, UpgradeGuard {
  /** The token realm this guard checks. */
  protected readonly realm: string = SHARED_REALM;

  /** Closes a connection when the JWT it opened with expires (absent where the guard is built by hand). */
  @Optional() @Inject(TokenExpiryService) protected readonly expiry?: TokenExpiryService;

  constructor(protected readonly tokens: AccessTokenService) {}

  canUpgrade(context: UpgradeContext): MaybePromise<void> {
    const result = this.tokens.authenticateUpgrade(readBearerToken(context.request), this.realm, context.protocol);
    return isPromise(result) ? result.then((settled) => this.upgradeWith(context, settled)) : this.upgradeWith(context, result);
  }

  private upgradeWith(context: UpgradeContext, result: AuthenticationResult): void {
    if (!result.ok) {
      const headers: Record<string, string> =
        result.status === 401 ? { 'WWW-Authenticate': this.tokens.challenge(result.error, context.url.pathname, context.request.headers.host) } : {};
      throw new UpgradeRefusedException(result.status, result.reason, headers);
    }
    // A device secret opens the device protocols only (AccessTokenService.authenticateUpgrade), whatever its owner's token may open.
    const refusal = result.device === undefined ? this.admissionRefusal(result.principal, context.protocol) : undefined;
    if (refusal) throw new UpgradeRefusedException(refusal.status, refusal.reason);
    if (result.expiresAt !== undefined) this.expiry?.note(context.request, result.expiresAt);
    if (result.device !== undefined) markDeviceCredential(context.request, result.device);
    context.principal = result.principal;
  }

  canActivate(context: ExecutionContext): MaybePromise<boolean> {
    const request = context.switchToHttp().getRequest<AuthenticatedRequest>();
    const result = this.tokens.authenticateBearer(readBearerToken(request), this.realm);
    return isPromise(result) ? result.then((settled) => this.activateWith(context, request, settled)) : this.activateWith(context, request, result);
  }

  private activateWith(context: ExecutionContext, request: AuthenticatedRequest, result: AuthenticationResult): boolean {
    if (!result.ok) {
      if (result.status === 401) {
        const response = context.switchToHttp().getResponse<ServerResponse>();
        const path = (request.url ?? '/').split('?')[0];
        if (!response.headersSent) response.setHeader('WWW-Authenticate', this.tokens.challenge(result.error, path, request.headers.host));
      }
      throw result.status === 401 ? new UnauthorizedException(result.reason) : new ForbiddenException(result.reason);
    }
    const protocol = gatewayProtocolOf(context.getClass());
    const refusal = protocol === undefined ? undefined : protocolRefusal(this.tokens.grantOf(result.principal), protocol);
    if (refusal) throw new ForbiddenException(refusal);
    if (requiresFullAccess(context.getClass()) && !hasFullAccess(this.tokens.grantOf(result.principal))) {
      throw new ForbiddenException('This route needs a token with full access (AUTH_TOKENS, or a tokens-file entry without tools, protocols or llm: false)');
    }
    request.principal = result.principal;
    return true;
  }

  /**
   * Whether `principal` may open a connection of `protocol`: its token's `protocols`. (Its
   * `max_connections` is counted with the other connection caps, in `ConnectionCaps`.)
   */
  admissionRefusal(principal: string, protocol: string): AdmissionRefusal | undefined {
    const refused = protocolRefusal(this.tokens.grantOf(principal), protocol);
    return refused ? { status: 403, reason: refused } : undefined;
  }
}
