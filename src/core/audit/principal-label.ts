/**
 * A principal as the audit log may meet it: today the auth service's string (`token:<hex>` or
 * `anonymous`); a principal object with a `name` once tokens are named in a tokens file.
 */
export type PrincipalLike = string | { readonly name?: string; readonly id?: string } | undefined;

const TOKEN_DIGEST = /^token:([0-9a-f]{8})/;

/**
 * Who made a call, as an audit line names it: the token's name when it has one; otherwise a
 * stable label that is not the secret, `token#<first 8 hex of the token's SHA-256>` (enough to
 * tell tokens apart in a log, too short to look a token up by); `anonymous` while auth is off;
 * `none` for a call made in-process, on nobody's behalf.
 */
export function principalLabel(principal: PrincipalLike): string {
  if (principal === undefined) return 'none';
  if (typeof principal !== 'string') return principal.name ?? principalLabel(principal.id);
  const digest = TOKEN_DIGEST.exec(principal);
  return digest ? `token#${digest[1]}` : principal;
}
