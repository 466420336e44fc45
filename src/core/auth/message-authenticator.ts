import { Inject, Injectable, Optional } from '@nestjs/common';
import type { GatewayConnection } from '../ws/connection';
import { isPromise, type MaybePromise } from '../maybe-promise';
import { AccessTokenService, AuthenticationResult } from './access-token.service';
import { protocolRefusal } from './grant';
import { TokenExpiryService } from './token-expiry.service';

/** How an auth frame ended: the principal it proved, or why not, for the protocol to word. */
export type MessageAuthentication =
  | { ok: true; principal: string }
  | {
      ok: false;
      /**
       * `missing`: no token; `invalid`: a token no realm knows; `forbidden`: the token may not use
       * this protocol; `full`: a connection cap (per token, or the protocol's) has no room for it.
       */
      failure: 'missing' | 'invalid' | 'forbidden' | 'full';
      reason: string;
    };

/**
 * Authentication by a frame after connecting, for every protocol that has one (UTCP's `auth`
 * frame, the MCP envelope's `auth`), decided once: the token is checked in the protocol's realm,
 * the token's `protocols` admit it, and the connection caps count it; only then does the
 * connection have its principal. The deadline for the frame is the route's (`authByMessage`);
 * what the client is told is the protocol's.
 */
@Injectable()
export class MessageAuthenticator {
  constructor(
    private readonly tokens: AccessTokenService,
    @Optional() @Inject(TokenExpiryService) private readonly expiry?: TokenExpiryService,
  ) {}

  /** At once for a static token; a promise for a JWT (its keys may have to be fetched). */
  authenticate(connection: GatewayConnection, token: unknown, realm?: string): MaybePromise<MessageAuthentication> {
    const result = this.tokens.authenticateBearer(typeof token === 'string' ? token : undefined, realm);
    if (!isPromise(result)) return this.settle(connection, result);
    return result.then((settled) =>
      connection.isOpen ? this.settle(connection, settled) : { ok: false, failure: 'invalid', reason: 'The connection closed during authentication' },
    );
  }

  private settle(connection: GatewayConnection, result: AuthenticationResult): MessageAuthentication {
    if (!result.ok) return { ok: false, failure: result.status === 401 && result.error === undefined ? 'missing' : 'invalid', reason: result.reason };
    const refused = protocolRefusal(this.tokens.grantOf(result.principal), connection.protocol);
    if (refused) return { ok: false, failure: 'forbidden', reason: refused };
    const full = connection.authenticate(result.principal);
    if (full !== undefined) return { ok: false, failure: 'full', reason: full };
    if (result.expiresAt !== undefined) this.expiry?.note(connection.request, result.expiresAt);
    return { ok: true, principal: result.principal };
  }
}
