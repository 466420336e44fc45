import { createHash } from 'crypto';
import type { JwtVerification } from './jwt-access-tokens';

/** How long, and for how many tokens, a verification is kept. */
const KEPT_TTL_MS = 60_000;
const KEPT_MAX = 10_000;

/**
 * Tokens the authorization server vouched for lately (a JWT's signature checked, an opaque token
 * introspected), by their SHA-256 so no token is held: an HTTP client sends the same token with
 * every call, and asking again costs more than the call. Kept for at most a minute and never past
 * the token's `exp` (so a key withdrawn or a token revoked stops it within that time), at most
 * 10,000, the oldest out first. Refusals are not kept: a flood of bad tokens fills nothing.
 */
export class KeptVerifications {
  private readonly kept = new Map<string, { verification: JwtVerification & { ok: true }; until: number }>();

  /** The kept verification of `token`, or `verify`'s, kept when it succeeded. */
  async of(token: string, verify: (token: string) => Promise<JwtVerification>): Promise<JwtVerification> {
    const digest = createHash('sha256').update(token).digest('base64');
    const now = Date.now();
    const kept = this.kept.get(digest);
    if (kept && kept.until > now) return kept.verification;
    if (kept) this.kept.delete(digest);
    const verification = await verify(token);
    if (verification.ok) {
      if (this.kept.size >= KEPT_MAX) this.kept.delete(this.kept.keys().next().value!);
      this.kept.set(digest, { verification, until: Math.min(now + KEPT_TTL_MS, verification.expiresAt ?? Infinity) });
    }
    return verification;
  }
}
