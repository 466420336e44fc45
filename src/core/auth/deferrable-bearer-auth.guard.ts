import { Injectable } from '@nestjs/common';
import { thenMaybe, type MaybePromise } from '../maybe-promise';
import { GatewayError, GatewayErrorCode } from '../errors/gateway-error';
import type { GatewayConnection } from '../ws/connection';
import type { UpgradeContext } from '../ws/upgrade-guard';
import { AccessTokenService } from './access-token.service';
import { BearerAuthGuard } from './bearer-auth.guard';
import { MessageAuthenticator } from './message-authenticator';
import { offersCredential } from './bearer-token';

/**
 * {@link BearerAuthGuard} for protocols that also take the token in a frame after connecting,
 * `{"type":"auth","token":"..."}` (UTCP 0.1):
 * - at the upgrade, a client that offers no credential is let in unauthenticated (its frames
 *   are refused until its auth frame succeeds), while one that offers a credential has it
 *   checked as usual (401/403 before any socket exists);
 * - {@link authenticate} checks an auth frame's token and settles the connection's principal.
 */
@Injectable()
export class DeferrableBearerAuthGuard extends BearerAuthGuard {
  constructor(
    tokens: AccessTokenService,
    private readonly messages: MessageAuthenticator,
  ) {
    super(tokens);
  }

  override canUpgrade(context: UpgradeContext): MaybePromise<void> {
    if (this.tokens.enabled && !offersCredential(context.request)) return;
    // Returned, not dropped: a JWT or an introspected token is checked asynchronously, and the upgrade must wait for it.
    return super.canUpgrade(context);
  }

  /** An auth frame's token (see {@link MessageAuthenticator}): authenticates `connection`, or throws UNAUTHORIZED/FORBIDDEN. */
  authenticate(connection: GatewayConnection, token: unknown): MaybePromise<void> {
    if (typeof token !== 'string' || token === '') {
      throw new GatewayError(GatewayErrorCode.UNAUTHORIZED, 'An auth frame needs a token: {"type":"auth","token":"<token>"}');
    }
    return thenMaybe(this.messages.authenticate(connection, token, this.realm), (result) => {
      if (!result.ok) throw new GatewayError(result.failure === 'missing' ? GatewayErrorCode.UNAUTHORIZED : GatewayErrorCode.FORBIDDEN, result.reason);
    });
  }
}
