import type { JWTPayload } from 'jose';
import type { Grant } from './grant';
import type { OidcMatch, OidcRule } from './tokens-file';

/** What the `oidc` rules of the tokens file read from a verified JWT. */
export interface JwtFacts {
  issuer: string;
  claims: JWTPayload;
  scopes: ReadonlySet<string>;
}

const stringsOf = (value: unknown): string[] =>
  typeof value === 'string' ? [value] : Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : [];

/** The roles a token carries: `roles`, or Keycloak's `realm_access.roles`. */
function rolesOf(claims: JWTPayload): string[] {
  const realmAccess = claims.realm_access as { roles?: unknown } | undefined;
  return [...stringsOf(claims.roles), ...stringsOf(realmAccess?.roles)];
}

/** Whether every condition of `match` holds for the token (each condition: any of its values). */
export function ruleMatches(match: OidcMatch, facts: JwtFacts): boolean {
  const anyOf = (wanted: string[] | undefined, have: Iterable<string>): boolean => {
    if (wanted === undefined) return true;
    const set = new Set(have);
    return wanted.some((value) => set.has(value));
  };
  const { claims } = facts;
  return (
    anyOf(match.scope, facts.scopes) &&
    anyOf(match.groups, stringsOf(claims.groups)) &&
    anyOf(match.roles, rolesOf(claims)) &&
    anyOf(match.sub, stringsOf(claims.sub)) &&
    anyOf(match.client_id, [...stringsOf(claims.client_id), ...stringsOf(claims.azp)]) &&
    anyOf(match.issuer, [facts.issuer])
  );
}

/** The grant of the first rule that matches; `undefined` when none does. */
export function grantByRules(rules: readonly OidcRule[], facts: JwtFacts): Grant | undefined {
  return rules.find((rule) => ruleMatches(rule.match, facts))?.grant;
}

/**
 * The scopes that would let a token use `toolName` (step-up, `insufficient_scope`): those of
 * the rules that match on `scope` and whose grant allows the tool.
 */
export function scopesForTool(rules: readonly OidcRule[], toolName: string): string[] {
  const scopes = new Set<string>();
  for (const rule of rules) if (rule.match.scope && rule.grant.mayUseTool(toolName)) for (const scope of rule.match.scope) scopes.add(scope);
  return [...scopes];
}

/** Every scope the rules name. */
export function scopesOfRules(rules: readonly OidcRule[]): string[] {
  return [...new Set(rules.flatMap((rule) => rule.match.scope ?? []))];
}
