import { createHash } from 'crypto';
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  decodeJwt,
  decodeProtectedHeader,
  errors,
  jwksCache,
  jwtVerify,
  type JWSHeaderParameters,
  type JWTPayload,
  type FlattenedJWSInput,
  type JWKSCacheInput,
  type KeyLike,
} from 'jose';
import type { GatewayConfig } from '../../config/gateway-config';
import { KeptVerifications } from './kept-verifications';

export type OidcSettings = GatewayConfig['auth']['oidc'];

/** The principal prefix of a JWT's subject: `oidc:<digest of issuer and sub>`. */
export const OIDC_PRINCIPAL_PREFIX = 'oidc:';

/** Longer than any access token an authorization server mints; larger ones are refused unread. */
export const MAX_JWT_LENGTH = 16 * 1024;

/** How long keys are kept without being fetched again. */
const JWKS_CACHE_MAX_AGE_MS = 10 * 60_000;
/** After a failed discovery, the issuer is not asked again for this long (tokens are refused meanwhile). */
const DISCOVERY_RETRY_MS = 10_000;

/** What a JWT's check found: who it is, and the claims the grant rules read. */
export type JwtVerification =
  { ok: true; principal: string; issuer: string; claims: JWTPayload; scopes: ReadonlySet<string>; expiresAt?: number } | { ok: false; reason: string };

/** Whether `token` is shaped as a JWS compact serialisation (three dot-separated parts, a JSON header with `alg`). */
export function looksLikeJwt(token: string): boolean {
  if (token.length > MAX_JWT_LENGTH * 64) return false;
  const first = token.indexOf('.');
  if (first <= 0) return false;
  const second = token.indexOf('.', first + 1);
  if (second < 0 || token.indexOf('.', second + 1) >= 0) return false;
  try {
    return typeof decodeProtectedHeader(token).alg === 'string';
  } catch {
    return false;
  }
}

/** The stable, non-secret principal of `sub` at `issuer`: a digest, so any issuer URL and subject fit the principal alphabet. */
export function oidcPrincipal(issuer: string, subject: string): string {
  return `${OIDC_PRINCIPAL_PREFIX}${createHash('sha256').update(`${issuer}#${subject}`, 'utf8').digest('hex').slice(0, 24)}`;
}

/** The scopes of a token: `scope` (space-separated, RFC 9068) or `scp` (a list or a string, Entra ID and others). */
export function scopesOf(claims: JWTPayload): Set<string> {
  const raw = claims.scope ?? claims.scp;
  const list = Array.isArray(raw) ? raw : typeof raw === 'string' ? raw.split(' ') : [];
  return new Set(list.filter((scope): scope is string => typeof scope === 'string' && scope !== ''));
}

type KeyResolver = (header: JWSHeaderParameters, token: FlattenedJWSInput) => Promise<KeyLike | Uint8Array>;

interface Issuer {
  url: string;
  keys?: KeyResolver;
  discovering?: Promise<KeyResolver>;
  failedAt?: number;
  failure?: string;
}

/**
 * Checks JWT access tokens from the trusted issuers (`OIDC_ISSUERS`): the issuer is chosen by
 * the token's `iss` (one not trusted is refused before any fetch), its metadata is discovered
 * once (OpenID Connect discovery, else RFC 8414), and its keys are fetched from `jwks_uri`
 * with `jose`'s remote key set: cached, fetched again on an unknown `kid` at most every `OIDC_JWKS_COOLDOWN`
 * (rotation), every fetch bounded by `OIDC_FETCH_TIMEOUT`. Then the signature (asymmetric
 * algorithms of `OIDC_ALGORITHMS` only), `iss`, `aud`, `exp` and `nbf` (with the clock skew).
 * Reasons never hold the token.
 */
export class JwtAccessTokens {
  private readonly issuers = new Map<string, Issuer>();
  private readonly verified = new KeptVerifications();

  constructor(
    private readonly settings: OidcSettings,
    private readonly fetchImpl: typeof fetch = fetch,
  ) {
    for (const url of settings.issuers) this.issuers.set(url, { url });
  }

  get enabled(): boolean {
    return this.issuers.size > 0;
  }

  get issuerUrls(): string[] {
    return [...this.issuers.keys()];
  }

  /**
   * The token checked, or a verification of the same token kept by {@link KeptVerifications}
   * (at most a minute, never past its `exp`, refusals never).
   */
  async verify(token: string): Promise<JwtVerification> {
    if (token.length > MAX_JWT_LENGTH) return { ok: false, reason: `Invalid token: longer than ${MAX_JWT_LENGTH} characters` };
    return this.verified.of(token, (checked) => this.check(checked));
  }

  private async check(token: string): Promise<JwtVerification> {
    let unverifiedIssuer: unknown;
    try {
      unverifiedIssuer = decodeJwt(token).iss;
    } catch {
      return { ok: false, reason: 'Invalid token: not a JWT' };
    }
    const issuer = typeof unverifiedIssuer === 'string' ? this.issuers.get(unverifiedIssuer) : undefined;
    if (!issuer) return { ok: false, reason: 'Invalid token: its issuer is not trusted' };
    let keys: KeyResolver;
    try {
      keys = await this.keysOf(issuer);
    } catch (error) {
      return { ok: false, reason: `Invalid token: the keys of its issuer cannot be had (${(error as Error).message})` };
    }
    try {
      const { payload } = await jwtVerify(token, keys, {
        issuer: issuer.url,
        audience: this.settings.audiences,
        algorithms: this.settings.algorithms,
        clockTolerance: this.settings.clockSkewSeconds,
      });
      if (typeof payload.sub !== 'string' || payload.sub === '') return { ok: false, reason: 'Invalid token: it has no sub' };
      return {
        ok: true,
        principal: oidcPrincipal(issuer.url, payload.sub),
        issuer: issuer.url,
        claims: payload,
        scopes: scopesOf(payload),
        expiresAt: typeof payload.exp === 'number' ? payload.exp * 1000 : undefined,
      };
    } catch (error) {
      return { ok: false, reason: `Invalid token: ${whyRefused(error)}` };
    }
  }

  private keysOf(issuer: Issuer): Promise<KeyResolver> {
    if (issuer.keys) return Promise.resolve(issuer.keys);
    if (issuer.failedAt !== undefined && Date.now() - issuer.failedAt < DISCOVERY_RETRY_MS) {
      return Promise.reject(new Error(issuer.failure ?? 'discovery failed'));
    }
    issuer.discovering ??= this.discover(issuer.url).then(
      (jwksUri) => {
        issuer.keys = withStaleKeys(jwksUri, this.settings.fetchTimeoutMs, this.settings.jwksCooldownMs);
        issuer.discovering = undefined;
        return issuer.keys;
      },
      (error: Error) => {
        issuer.failedAt = Date.now();
        issuer.failure = error.message;
        issuer.discovering = undefined;
        throw error;
      },
    );
    return issuer.discovering;
  }

  /** The issuer's `jwks_uri`, from OpenID Connect discovery or else RFC 8414 metadata; the metadata's `issuer` must be the issuer. */
  private async discover(issuerUrl: string): Promise<string> {
    const base = issuerUrl.replace(/\/+$/, '');
    const url = new URL(issuerUrl);
    const path = url.pathname === '/' ? '' : url.pathname.replace(/\/+$/, '');
    const candidates = [`${base}/.well-known/openid-configuration`, `${url.origin}/.well-known/oauth-authorization-server${path}`];
    let last = 'no metadata';
    // One deadline for both documents: discovery waits OIDC_FETCH_TIMEOUT at most.
    const signal = AbortSignal.timeout(this.settings.fetchTimeoutMs);
    for (const candidate of candidates) {
      try {
        const response = await this.fetchImpl(candidate, { signal, redirect: 'error' });
        if (!response.ok) {
          last = `${candidate} answered ${response.status}`;
          continue;
        }
        const metadata = (await response.json()) as { issuer?: unknown; jwks_uri?: unknown };
        if (metadata.issuer !== issuerUrl) {
          last = `${candidate} names another issuer`;
          continue;
        }
        if (typeof metadata.jwks_uri !== 'string') {
          last = `${candidate} has no jwks_uri`;
          continue;
        }
        return metadata.jwks_uri;
      } catch (error) {
        last = `${candidate}: ${(error as Error).name === 'TimeoutError' ? 'timed out' : (error as Error).message}`;
      }
    }
    throw new Error(`metadata of ${issuerUrl}: ${last}`);
  }
}

/**
 * The issuer's keys from `jwks_uri` (jose's remote key set: cached, refetched when stale or on
 * an unknown `kid`), and, when a refetch fails (the endpoint is down or slow), the keys of the
 * last good fetch: an outage at the issuer does not refuse tokens signed with known keys.
 */
function withStaleKeys(jwksUri: string, timeoutMs: number, cooldownMs: number): KeyResolver {
  const cache: JWKSCacheInput = {} as JWKSCacheInput;
  const remote = createRemoteJWKSet(new URL(jwksUri), {
    timeoutDuration: timeoutMs,
    cooldownDuration: cooldownMs,
    cacheMaxAge: JWKS_CACHE_MAX_AGE_MS,
    [jwksCache]: cache,
  });
  return async (header, token) => {
    try {
      return await remote(header, token);
    } catch (error) {
      // A key the set does not have is an answer; anything else (timeout, refused connection, a bad answer) is an outage.
      const unreachable = !(error instanceof errors.JWKSNoMatchingKey || error instanceof errors.JWKSMultipleMatchingKeys);
      const known = (cache as { jwks?: Parameters<typeof createLocalJWKSet>[0] }).jwks;
      if (!unreachable || known === undefined) throw error;
      return createLocalJWKSet(known)(header, token);
    }
  };
}

/** A refusal's words, from jose's error: what was wrong, never the token. */
function whyRefused(error: unknown): string {
  if (error instanceof errors.JWTExpired) return 'expired';
  if (error instanceof errors.JWTClaimValidationFailed) {
    if (error.claim === 'nbf') return 'not yet valid';
    if (error.claim === 'aud') return 'issued for another audience';
    if (error.claim === 'iss') return 'its issuer is not trusted';
    return `claim ${error.claim} is not acceptable`;
  }
  if (error instanceof errors.JOSEAlgNotAllowed) return 'signed with an algorithm that is not allowed';
  if (error instanceof errors.JWSSignatureVerificationFailed) return 'bad signature';
  if (error instanceof errors.JWKSNoMatchingKey) return 'signed with a key its issuer does not have';
  if (error instanceof errors.JWKSTimeout) return "its issuer's keys did not arrive in time";
  if (error instanceof errors.JOSEError) return error.code;
  return 'cannot be checked';
}
