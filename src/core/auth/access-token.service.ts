import { Inject, Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { readFileSync, statSync } from 'fs';
import { timingSafeEqual } from 'crypto';
import { GATEWAY_CONFIG, GatewayConfig } from '../../config/gateway-config';
import { watchFileChanges } from './file-watch';
import { FULL_ACCESS, Grant, NO_ACCESS } from './grant';
import { NamedToken, parseTokensFile, tokenDigest, TokensFileError } from './tokens-file';

export type AuthenticationResult =
  | { ok: true; principal: string }
  | { ok: false; status: 401 | 403; reason: string };

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
 * the previous tokens stay. Grants are looked up on every use, so a reload changes what live
 * connections may do at once.
 */
@Injectable()
export class AccessTokenService implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('Auth');
  private readonly realms = new Map<string, Realm>();
  private named: NamedToken[] = [];
  private grants = new Map<string, Grant>();
  private stopWatching?: () => void;
  private lastText?: string;

  constructor(@Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig) {
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

  onModuleDestroy(): void {
    this.stopWatching?.();
  }

  /** Whether any token is configured (`AUTH_TOKENS` or `AUTH_TOKENS_FILE`); with none the shared routes are open. */
  get enabled(): boolean {
    return this.realm(SHARED_REALM).digests.length > 0 || this.config.auth.tokensFile !== undefined;
  }

  /**
   * Adds (or replaces) a realm that accepts the shared tokens and `tokens`, and that refuses
   * everyone when it has neither: routes guarded by it are never left open.
   */
  defineRealm(name: string, tokens: string[]): void {
    const digests = [...this.realm(SHARED_REALM).digests, ...tokens.map(tokenDigest)];
    this.realms.set(name, { digests, openWithoutTokens: false });
  }

  authenticate(token: string | undefined, realmName: string = SHARED_REALM): AuthenticationResult {
    const realm = this.realm(realmName);
    if (!this.enabled && realm.openWithoutTokens) return { ok: true, principal: ANONYMOUS_PRINCIPAL };
    if (token === undefined || token === '') {
      return { ok: false, status: 401, reason: 'Authentication required: send "Authorization: Bearer <token>"' };
    }
    const candidate = tokenDigest(token);
    let matched = false;
    for (const known of realm.digests) matched = timingSafeEqual(candidate, known) || matched;
    let named: NamedToken | undefined;
    for (const entry of this.named) if (timingSafeEqual(candidate, entry.digest)) named ??= entry;
    if (named) return { ok: true, principal: `${NAMED_PREFIX}${named.name}` };
    return matched
      ? { ok: true, principal: `token:${candidate.toString('hex').slice(0, 16)}` }
      : { ok: false, status: 403, reason: 'Invalid token' };
  }

  /**
   * What `principal` may do now: its entry of the tokens file for a named token (nothing, once a
   * reload removed it), everything for `AUTH_TOKENS`, anonymous and internal callers.
   */
  grantOf(principal: string | undefined): Grant {
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
      this.logger.log(`Reloaded AUTH_TOKENS_FILE ${path}: ${this.named.length} token(s)`);
      return true;
    } catch (error) {
      const why = error instanceof TokensFileError ? error.message : `AUTH_TOKENS_FILE ${path} cannot be read: ${(error as Error).message}`;
      this.logger.error(`${why}\nKeeping the ${this.named.length} token(s) read before.`);
      return false;
    }
  }

  private read(path: string, text?: string): NamedToken[] {
    let content = text;
    try {
      content ??= readFileSync(path, 'utf8');
      if ((statSync(path).mode & 0o004) !== 0) {
        this.logger.warn(`AUTH_TOKENS_FILE ${path} is readable by every user of this machine: chmod o-r it (or use sha256 entries)`);
      }
    } catch (error) {
      throw new TokensFileError(path, [`cannot be read: ${(error as Error).message}`]);
    }
    const tokens = parseTokensFile(content, path);
    this.lastText = content;
    return tokens;
  }

  private use(tokens: NamedToken[]): void {
    this.named = tokens;
    this.grants = new Map(tokens.map((token) => [`${NAMED_PREFIX}${token.name}`, token.grant]));
  }

  private realm(name: string): Realm {
    const realm = this.realms.get(name);
    if (!realm) throw new Error(`Unknown token realm "${name}": define it with AccessTokenService.defineRealm() first`);
    return realm;
  }
}
