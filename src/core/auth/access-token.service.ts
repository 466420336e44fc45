import { Inject, Injectable } from '@nestjs/common';
import { createHash, timingSafeEqual } from 'crypto';
import { GATEWAY_CONFIG, GatewayConfig } from '../../config/gateway-config';

export type AuthenticationResult =
  | { ok: true; principal: string }
  | { ok: false; status: 401 | 403; reason: string };

/** The principal of every caller while `AUTH_TOKENS` is empty. */
export const ANONYMOUS_PRINCIPAL = 'anonymous';

/** The realm of the shared routes: the tokens of `AUTH_TOKENS`, open while there are none. */
export const SHARED_REALM = 'shared';

const digest = (token: string): Buffer => createHash('sha256').update(token, 'utf8').digest();

interface Realm {
  digests: Buffer[];
  /** Whether the realm lets everyone in when it has no token. */
  openWithoutTokens: boolean;
}

/**
 * The one token check for every protocol. Tokens are compared as SHA-256 digests with
 * `timingSafeEqual`, against every configured token without an early exit, so neither a
 * token's length nor how much of it matched shows in the response time. A principal is a
 * short digest of the token: stable across instances (sessions can be owned by it) and not
 * the secret itself.
 *
 * Tokens belong to realms. The shared realm holds `AUTH_TOKENS`; a protocol that has a token
 * setting of its own and must never be open (MCP) defines a realm with {@link defineRealm}.
 */
@Injectable()
export class AccessTokenService {
  private readonly realms = new Map<string, Realm>();

  constructor(@Inject(GATEWAY_CONFIG) config: GatewayConfig) {
    this.realms.set(SHARED_REALM, { digests: config.auth.tokens.map(digest), openWithoutTokens: true });
  }

  /** Whether any shared token is configured; with none the shared routes are open. */
  get enabled(): boolean {
    return this.realm(SHARED_REALM).digests.length > 0;
  }

  /**
   * Adds (or replaces) a realm that accepts the shared tokens and `tokens`, and that refuses
   * everyone when it has neither: routes guarded by it are never left open.
   */
  defineRealm(name: string, tokens: string[]): void {
    const digests = [...this.realm(SHARED_REALM).digests, ...tokens.map(digest)];
    this.realms.set(name, { digests, openWithoutTokens: false });
  }

  authenticate(token: string | undefined, realmName: string = SHARED_REALM): AuthenticationResult {
    const realm = this.realm(realmName);
    if (realm.digests.length === 0 && realm.openWithoutTokens) return { ok: true, principal: ANONYMOUS_PRINCIPAL };
    if (token === undefined || token === '') {
      return { ok: false, status: 401, reason: 'Authentication required: send "Authorization: Bearer <token>"' };
    }
    const candidate = digest(token);
    let matched = false;
    for (const known of realm.digests) matched = timingSafeEqual(candidate, known) || matched;
    return matched
      ? { ok: true, principal: `token:${candidate.toString('hex').slice(0, 16)}` }
      : { ok: false, status: 403, reason: 'Invalid token' };
  }

  private realm(name: string): Realm {
    const realm = this.realms.get(name);
    if (!realm) throw new Error(`Unknown token realm "${name}": define it with AccessTokenService.defineRealm() first`);
    return realm;
  }
}
