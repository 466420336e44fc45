import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy, OnModuleInit, Optional } from '@nestjs/common';
import { readFileSync, statSync } from 'fs';
import { timingSafeEqual } from 'crypto';
import { GATEWAY_CONFIG, GatewayConfig } from '../../config/gateway-config';
import type { MaybePromise } from '../maybe-promise';
import { ProtocolRegistry } from '../protocols/protocol-registry';
import { watchFileChanges } from './file-watch';
import { DEVICE_SECRET_PREFIX, DeviceCredentialCheck } from './device-credential';
import { FULL_ACCESS, Grant, NO_ACCESS } from './grant';
import { JwtAccessTokens, type JwtVerification, looksLikeJwt, OIDC_PRINCIPAL_PREFIX } from './jwt-access-tokens';
import { TokenIntrospection } from './token-introspection';
import { grantByRules, JwtFacts, scopesForTool, scopesOfRules } from './oidc-rules';
import { NamedToken, OidcRule, parseTokensDocument, TokensDocument, tokenDigest, TokensFileError } from './tokens-file';

export type AuthenticationResult =
  | {
      ok: true;
      principal: string;
      /** A JWT's scopes (`scope`/`scp`); absent for static tokens. */
      scopes?: ReadonlySet<string>;
      /** When a JWT stops being valid (ms since the epoch); absent for static tokens. */
      expiresAt?: number;
      /** A device's own secret: the one device it may connect as (the principal is its owner's). */
      device?: string;
    }
  | {
      ok: false;
      status: 401 | 403;
      reason: string;
      /** `invalid_token` when a token was given and refused with 401 (RFC 6750), for the `WWW-Authenticate` challenge. */
      error?: 'invalid_token';
    };

/** JWT principals whose grant is remembered at once; the least recently authenticated go first. */
const MAX_REMEMBERED_JWT_GRANTS = 10_000;

/** The principal of every caller while `AUTH_TOKENS` is empty. */
export const ANONYMOUS_PRINCIPAL = 'anonymous';

/** The realm of the shared routes: the tokens of `AUTH_TOKENS`, open while there are none. */
export const SHARED_REALM = 'shared';

/** The principal of a token of `AUTH_TOKENS_FILE`: its name, so sessions and limits follow the name across token rotations. */
const NAMED_PREFIX = 'name:';

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
 *
 * The named tokens of `AUTH_TOKENS_FILE` are accepted in every realm, each as `name:<name>`,
 * with what the file lets it do ({@link grantOf}). The file is read at start (a bad file stops
 * the gateway) and again whenever it changes; a bad new version is refused with a log line and
 * the previous tokens stay. The protocols a token names are checked against the
 * {@link ProtocolRegistry} once every module has declared its own (`onApplicationBootstrap`),
 * and on every reload. Grants are looked up on every use, so a reload changes what live
 * connections may do at once.
 */
@Injectable()
export class AccessTokenService implements OnModuleInit, OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('Auth');
  private readonly realms = new Map<string, Realm>();
  private named: NamedToken[] = [];
  private grants = new Map<string, Grant>();
  private stopWatching?: () => void;
  private lastText?: string;
  /** JWT access tokens of `OIDC_ISSUERS`. */
  readonly jwts: JwtAccessTokens;
  /** Opaque access tokens, asked about at `OIDC_INTROSPECTION_URL`. */
  readonly introspection: TokenIntrospection;
  /** The `oidc` rules of the tokens file. */
  private rules: OidcRule[] = [];
  /** Bumped whenever the rules change, so remembered JWT grants are computed again. */
  private rulesVersion = 0;
  /** Each JWT principal's facts and grant, as of its latest authentication (bounded, least recent out first). */
  private readonly jwtGrants = new Map<string, { facts: JwtFacts; grant: Grant; version: number }>();
  /** Whether every protocol has declared itself, so that a token may name only those. */
  private protocolsKnown = false;
  /** Who checks devices' own secrets (activation), when it is on. */
  private deviceCheck?: DeviceCredentialCheck;
  /** The protocols a device secret may open: those devices speak. */
  private readonly deviceProtocols = new Set<string>();

  constructor(
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
    @Optional() private readonly protocols?: ProtocolRegistry,
  ) {
    this.jwts = new JwtAccessTokens(config.auth.oidc);
    this.introspection = new TokenIntrospection(config.auth.oidc);
    this.realms.set(SHARED_REALM, { digests: config.auth.tokens.map(tokenDigest), openWithoutTokens: true });
    const path = config.auth.tokensFile;
    if (path !== undefined) this.use(this.read(path));
  }

  onModuleInit(): void {
    const path = this.config.auth.tokensFile;
    if (path === undefined) return;
    this.stopWatching = watchFileChanges(
      path,
      () => this.reload(),
      (error) => this.logger.warn(`Cannot watch AUTH_TOKENS_FILE ${path} for changes: ${error.message}`),
    );
  }

  /** Every protocol is declared by now: a file naming one that is not stops the boot. */
  onApplicationBootstrap(): void {
    this.protocolsKnown = true;
    const path = this.config.auth.tokensFile;
    if (path !== undefined && this.lastText !== undefined) parseTokensDocument(this.lastText, path, this.grantableProtocols());
  }

  onModuleDestroy(): void {
    this.stopWatching?.();
  }

  /** Whether any token is configured (`AUTH_TOKENS`, `AUTH_TOKENS_FILE` or `OIDC_ISSUERS`); with none the shared routes are open. */
  get enabled(): boolean {
    return this.realm(SHARED_REALM).digests.length > 0 || this.config.auth.tokensFile !== undefined || this.jwts.enabled || this.introspection.enabled;
  }

  /**
   * Adds (or replaces) a realm that accepts the shared tokens and `tokens`, and that refuses
   * everyone when it has neither: routes guarded by it are never left open.
   */
  defineRealm(name: string, tokens: string[]): void {
    const digests = [...this.realm(SHARED_REALM).digests, ...tokens.map(tokenDigest)];
    this.realms.set(name, { digests, openWithoutTokens: false });
  }

  /**
   * Who `token` proves to be in `realmName`, whatever kind of token it is: every protocol's
   * check goes through here. Static tokens are answered at once (no promise, see
   * {@link authenticate}); with `OIDC_ISSUERS` set, a token shaped as a JWT is checked by
   * {@link JwtAccessTokens}, which may have to fetch keys, so it is answered by a promise (a JWT
   * from an issuer not trusted is refused with 401: it never falls back to the static tokens).
   */
  authenticateBearer(token: string | undefined, realmName: string = SHARED_REALM): MaybePromise<AuthenticationResult> {
    if (token !== undefined && this.jwts.enabled && looksLikeJwt(token) && (this.enabled || !this.realm(realmName).openWithoutTokens)) {
      return this.jwts.verify(token).then((verified) => this.authenticateVerified(verified));
    }
    const result = this.authenticate(token, realmName);
    // Not a static token: with an introspection endpoint, an opaque token of the authorization server perhaps.
    if (!result.ok && token && this.introspection.enabled && !looksLikeJwt(token)) {
      return this.introspection.introspect(token).then((verified) => this.authenticateVerified(verified));
    }
    return result;
  }

  /** Device secrets (issued at activation) are checked by `check` from now on. */
  useDeviceCredentials(check: DeviceCredentialCheck): void {
    this.deviceCheck = check;
  }

  /** A protocol devices speak: a device secret may open its connections (and nothing else: no HTTP route, no agent protocol). */
  acceptDeviceCredentialsOn(protocol: string): void {
    this.deviceProtocols.add(protocol);
  }

  /**
   * Who an upgrade's token proves to be: {@link authenticateBearer}, and on the protocols devices
   * speak, a device's own secret too, as its owner's principal restricted to that device
   * (`device`; the device identity check holds the connection to it).
   */
  authenticateUpgrade(token: string | undefined, realmName: string, protocol: string): MaybePromise<AuthenticationResult> {
    const check = this.deviceCheck;
    if (token === undefined || !token.startsWith(DEVICE_SECRET_PREFIX) || !check || !this.deviceProtocols.has(protocol))
      return this.authenticateBearer(token, realmName);
    const known = this.authenticate(token, realmName);
    if (known.ok) return known;
    return check(token).then(
      (found): AuthenticationResult =>
        found ? { ok: true, principal: found.principal, device: found.deviceId } : { ok: false, status: 403, reason: 'Invalid token' },
      (error: Error): AuthenticationResult => {
        this.logger.warn(`A device credential could not be checked: ${error.message}`);
        return { ok: false, status: 403, reason: 'The device credential cannot be checked now; try again' };
      },
    );
  }

  /**
   * Who a static token (`AUTH_TOKENS`, `AUTH_TOKENS_FILE`, a realm's own) proves to be in
   * `realmName`, synchronously. JWTs are {@link authenticateBearer}'s: here they are unknown tokens.
   */
  authenticate(token: string | undefined, realmName: string = SHARED_REALM): AuthenticationResult {
    const realm = this.realm(realmName);
    if (!this.enabled && realm.openWithoutTokens) return { ok: true, principal: ANONYMOUS_PRINCIPAL };
    if (token === undefined || token === '') {
      return { ok: false, status: 401, reason: 'Authentication required: send "Authorization: Bearer <token>"' };
    }
    const result = this.authenticateStatic(token, realm);
    // With an authorization server, an unknown token is an invalid one (401), so OAuth clients fetch a new one.
    if (!result.ok && (this.jwts.enabled || this.introspection.enabled)) return { ok: false, status: 401, reason: result.reason, error: 'invalid_token' };
    return result;
  }

  /** The scopes the tokens file's `oidc` rules name (for `scopes_supported`). */
  oidcScopes(): string[] {
    return scopesOfRules(this.rules);
  }

  /**
   * The `WWW-Authenticate` challenge of a 401 for a request to `path` (RFC 6750, RFC 9728): with
   * `OIDC_ISSUERS`, it points at the protected resource metadata (path-suffixed for a protocol's
   * own resource, its `protectedResource` in the {@link ProtocolRegistry}), so OAuth clients
   * (MCP's) find the authorization server; `error="invalid_token"` when a token was given.
   * `host` stands in for `PUBLIC_URL` when that is unset.
   */
  challenge(error: 'invalid_token' | 'insufficient_scope' | undefined, path: string, host: string | undefined, scope?: string): string {
    const parts: string[] = [];
    if (this.jwts.enabled) {
      const base = this.config.auth.publicUrl ?? `http://${host ?? 'localhost'}`;
      const resource = this.protocols?.protectedResourceOf(path) ?? '';
      parts.push(`resource_metadata="${base}/.well-known/oauth-protected-resource${resource}"`);
    }
    if (error) parts.push(`error="${error}"`);
    if (scope !== undefined) parts.push(`scope="${scope}"`);
    return parts.length === 0 ? 'Bearer' : `Bearer ${parts.join(', ')}`;
  }

  /** A token the authorization server vouches for (a verified JWT, an active introspected token), as a principal with its grant. */
  private authenticateVerified(verified: JwtVerification): AuthenticationResult {
    if (!verified.ok) return { ok: false, status: 401, reason: verified.reason, error: 'invalid_token' };
    const facts: JwtFacts = { issuer: verified.issuer, claims: verified.claims, scopes: verified.scopes };
    const grant = this.grantOfJwt(facts);
    if (!grant) return { ok: false, status: 403, reason: "No rule of the tokens file's oidc section matches this token" };
    this.rememberGrant(verified.principal, { facts, grant, version: this.rulesVersion });
    return { ok: true, principal: verified.principal, scopes: verified.scopes, expiresAt: verified.expiresAt };
  }

  /** What a JWT may do: the first `oidc` rule that matches it; what an `AUTH_TOKENS` token may with no rules; `undefined` when rules exist and none matches. */
  private grantOfJwt(facts: JwtFacts): Grant | undefined {
    return this.rules.length === 0 ? FULL_ACCESS : grantByRules(this.rules, facts);
  }

  /** The scopes whose `oidc` rules would let a token use `toolName`; empty when no rule matches on scope. */
  scopesForTool(toolName: string): string[] {
    return scopesForTool(this.rules, toolName);
  }

  /** The scopes of the JWT `principal` last authenticated with; empty for other principals. */
  scopesOf(principal: string | undefined): ReadonlySet<string> {
    return (principal === undefined ? undefined : this.jwtGrants.get(principal)?.facts.scopes) ?? new Set<string>();
  }

  /**
   * The `WWW-Authenticate` challenge of a 403 for a tool the token's scopes do not cover (step-up,
   * RFC 6750 `insufficient_scope`); `undefined` when no `oidc` rule grants that tool by a scope.
   */
  scopeChallenge(principal: string | undefined, toolName: string, path: string, host: string | undefined): string | undefined {
    if (!this.isJwtPrincipal(principal) || this.grantOf(principal).mayUseTool(toolName)) return undefined;
    const needed = this.scopesForTool(toolName);
    if (needed.length === 0) return undefined;
    const scope = [...new Set([...this.scopesOf(principal), ...needed])].join(' ');
    return this.challenge('insufficient_scope', path, host, scope);
  }

  /** Whether `principal` is a JWT's. */
  isJwtPrincipal(principal: string | undefined): boolean {
    return principal?.startsWith(OIDC_PRINCIPAL_PREFIX) === true;
  }

  private rememberGrant(principal: string, grant: { facts: JwtFacts; grant: Grant; version: number }): void {
    this.jwtGrants.delete(principal);
    this.jwtGrants.set(principal, grant);
    if (this.jwtGrants.size > MAX_REMEMBERED_JWT_GRANTS) this.jwtGrants.delete(this.jwtGrants.keys().next().value as string);
  }

  private authenticateStatic(token: string, realm: Realm): AuthenticationResult {
    const candidate = tokenDigest(token);
    let matched = false;
    for (const known of realm.digests) matched = timingSafeEqual(candidate, known) || matched;
    let named: NamedToken | undefined;
    for (const entry of this.named) if (timingSafeEqual(candidate, entry.digest)) named ??= entry;
    if (named) return { ok: true, principal: `${NAMED_PREFIX}${named.name}` };
    return matched ? { ok: true, principal: `token:${candidate.toString('hex').slice(0, 16)}` } : { ok: false, status: 403, reason: 'Invalid token' };
  }

  /**
   * What `principal` may do now: its entry of the tokens file for a named token (nothing, once a
   * reload removed it), everything for `AUTH_TOKENS`, anonymous and internal callers.
   */
  grantOf(principal: string | undefined): Grant {
    if (principal?.startsWith(OIDC_PRINCIPAL_PREFIX)) {
      const remembered = this.jwtGrants.get(principal);
      if (!remembered) return this.rules.length === 0 ? FULL_ACCESS : NO_ACCESS;
      if (remembered.version !== this.rulesVersion) {
        remembered.grant = this.grantOfJwt(remembered.facts) ?? NO_ACCESS;
        remembered.version = this.rulesVersion;
      }
      return remembered.grant;
    }
    if (principal === undefined || !principal.startsWith(NAMED_PREFIX)) return FULL_ACCESS;
    return this.grants.get(principal) ?? NO_ACCESS;
  }

  /** Reads the tokens file again; a file that does not parse leaves the current tokens in place. Returns whether it changed them. */
  reload(): boolean {
    const path = this.config.auth.tokensFile;
    if (path === undefined) return false;
    try {
      const text = readFileSync(path, 'utf8');
      if (text === this.lastText) return false;
      this.use(this.read(path, text));
      this.logger.log(`Reloaded AUTH_TOKENS_FILE ${path}: ${this.named.length} token(s), ${this.rules.length} oidc rule(s)`);
      return true;
    } catch (error) {
      const why = error instanceof TokensFileError ? error.message : `AUTH_TOKENS_FILE ${path} cannot be read: ${(error as Error).message}`;
      this.logger.error(`${why}\nKeeping the ${this.named.length} token(s) read before.`);
      return false;
    }
  }

  private read(path: string, text?: string): TokensDocument {
    let content = text;
    try {
      content ??= readFileSync(path, 'utf8');
      if ((statSync(path).mode & 0o004) !== 0) {
        this.logger.warn(`AUTH_TOKENS_FILE ${path} is readable by every user of this machine: chmod o-r it (or use sha256 entries)`);
      }
    } catch (error) {
      throw new TokensFileError(path, [`cannot be read: ${(error as Error).message}`]);
    }
    const document = parseTokensDocument(content, path, this.grantableProtocols());
    this.lastText = content;
    return document;
  }

  private use({ tokens, oidc }: TokensDocument): void {
    this.rules = oidc;
    this.rulesVersion++;
    this.named = tokens;
    this.grants = new Map(tokens.map((token) => [`${NAMED_PREFIX}${token.name}`, token.grant]));
  }

  /** The protocols a token may name: the registry's once it is complete, any until then. */
  private grantableProtocols(): string[] | undefined {
    return this.protocolsKnown ? this.protocols?.names() : undefined;
  }

  private realm(name: string): Realm {
    const realm = this.realms.get(name);
    if (!realm) throw new Error(`Unknown token realm "${name}": define it with AccessTokenService.defineRealm() first`);
    return realm;
  }
}
