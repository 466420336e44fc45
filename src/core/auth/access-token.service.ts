import { Inject, Injectable } from '@nestjs/common';
import { createHash, timingSafeEqual } from 'crypto';
import { GATEWAY_CONFIG, GatewayConfig } from '../../config/gateway-config';

export type AuthenticationResult =
  | { ok: true; principal: string }
  | { ok: false; status: 401 | 403; reason: string };

/** The principal of every caller while `AUTH_TOKENS` is empty. */
export const ANONYMOUS_PRINCIPAL = 'anonymous';

const digest = (token: string): Buffer => createHash('sha256').update(token, 'utf8').digest();

/**
 * The one token check for every protocol. Tokens are compared as SHA-256 digests with
 * `timingSafeEqual`, against every configured token without an early exit, so neither a
 * token's length nor how much of it matched shows in the response time. A principal is a
 * short digest of the token: stable across instances (sessions can be owned by it) and not
 * the secret itself.
 */
@Injectable()
export class AccessTokenService {
  private readonly digests: Buffer[];

  constructor(@Inject(GATEWAY_CONFIG) config: GatewayConfig) {
    this.digests = config.auth.tokens.map(digest);
  }

  /** Whether any token is configured; with none the shared routes are open. */
  get enabled(): boolean {
    return this.digests.length > 0;
  }

  authenticate(token: string | undefined): AuthenticationResult {
    if (!this.enabled) return { ok: true, principal: ANONYMOUS_PRINCIPAL };
    if (token === undefined || token === '') {
      return { ok: false, status: 401, reason: 'Authentication required: send "Authorization: Bearer <token>"' };
    }
    const candidate = digest(token);
    let matched = false;
    for (const known of this.digests) matched = timingSafeEqual(candidate, known) || matched;
    return matched
      ? { ok: true, principal: `token:${candidate.toString('hex').slice(0, 16)}` }
      : { ok: false, status: 403, reason: 'Invalid token' };
  }
}
