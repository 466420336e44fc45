import { type JwtVerification, MAX_JWT_LENGTH, type OidcSettings, oidcPrincipal, scopesOf } from './jwt-access-tokens';
import { KeptVerifications } from './kept-verifications';

/**
 * RFC 7662 introspection of opaque access tokens (`OIDC_INTROSPECTION_URL`): the gateway posts
 * the token as a client of the authorization server (`client_secret_basic`) and accepts it while
 * the answer says `active`, its `exp` and `nbf` hold (with the clock skew) and its `aud` names this
 * gateway. The principal is that of a JWT with the same issuer and subject (`sub`, else the
 * `client_id` of a client-credentials token), so the tokens file's `oidc` rules apply alike. An
 * active answer is kept at most a minute and never past `exp` (a revocation takes that long to
 * be seen); refusals are not kept, and every request is bounded by `OIDC_FETCH_TIMEOUT`.
 */
export class TokenIntrospection {
  private readonly active = new KeptVerifications();

  constructor(
    private readonly settings: OidcSettings,
    private readonly fetchImpl: typeof fetch = fetch,
  ) {}

  get enabled(): boolean {
    return this.settings.introspection !== undefined;
  }

  async introspect(token: string): Promise<JwtVerification> {
    if (token.length > MAX_JWT_LENGTH) return { ok: false, reason: `Invalid token: longer than ${MAX_JWT_LENGTH} characters` };
    return this.active.of(token, (asked) => this.ask(asked));
  }

  private async ask(token: string): Promise<JwtVerification> {
    const { url, clientId, clientSecret } = this.settings.introspection!;
    const credentials = Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(clientSecret)}`).toString('base64');
    let answer: Record<string, unknown>;
    try {
      const response = await this.fetchImpl(url, {
        method: 'POST',
        headers: { Authorization: `Basic ${credentials}`, 'Content-Type': 'application/x-www-form-urlencoded', Accept: 'application/json' },
        body: new URLSearchParams({ token, token_type_hint: 'access_token' }).toString(),
        signal: AbortSignal.timeout(this.settings.fetchTimeoutMs),
      });
      if (!response.ok) return { ok: false, reason: `Invalid token: the introspection endpoint answered ${response.status}` };
      answer = (await response.json()) as Record<string, unknown>;
    } catch (error) {
      return { ok: false, reason: `Invalid token: the introspection endpoint cannot be reached (${(error as Error).message})` };
    }
    return this.judge(answer, url);
  }

  private judge(answer: Record<string, unknown>, url: string): JwtVerification {
    if (answer?.active !== true) return { ok: false, reason: 'Invalid token: not active' };
    const nowSeconds = Date.now() / 1000;
    const skew = this.settings.clockSkewSeconds;
    if (typeof answer.exp === 'number' && answer.exp + skew <= nowSeconds) return { ok: false, reason: 'Invalid token: expired' };
    if (typeof answer.nbf === 'number' && answer.nbf - skew > nowSeconds) return { ok: false, reason: 'Invalid token: not valid yet' };
    const audiences = Array.isArray(answer.aud) ? answer.aud : [answer.aud];
    if (!audiences.some((audience) => typeof audience === 'string' && this.settings.audiences.includes(audience))) {
      return { ok: false, reason: 'Invalid token: it is not for this gateway (aud)' };
    }
    const subject = typeof answer.sub === 'string' && answer.sub !== '' ? answer.sub : answer.client_id;
    if (typeof subject !== 'string' || subject === '') return { ok: false, reason: 'Invalid token: it has neither sub nor client_id' };
    const issuer = typeof answer.iss === 'string' && answer.iss !== '' ? answer.iss : new URL(url).origin;
    return {
      ok: true,
      principal: oidcPrincipal(issuer, subject),
      issuer,
      claims: answer,
      scopes: scopesOf(answer),
      expiresAt: typeof answer.exp === 'number' ? answer.exp * 1000 : undefined,
    };
  }
}
