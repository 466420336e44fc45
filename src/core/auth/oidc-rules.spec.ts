import { grantByRules, JwtFacts, ruleMatches, scopesForTool, scopesOfRules } from './oidc-rules';
import { parseTokensDocument, TokensFileError } from './tokens-file';

const parse = (text: string) => parseTokensDocument(text, '/etc/tokens.yaml', ['llm', 'mcp']);

const facts = (claims: Record<string, unknown>, scopes: string[] = []): JwtFacts => ({
  issuer: 'https://idp.test',
  claims: { sub: 'alice', ...claims },
  scopes: new Set(scopes),
});

describe('the oidc rules of the tokens file', () => {
  const { oidc } = parse(`
oidc:
  - name: admins
    match: {groups: admins}
    grant: {}
  - match: {scope: [tools:read, tools:list], client_id: agent}
    grant: {tools: [get_*], protocols: [mcp], llm: false, rate_limits: {tool_calls_per_minute: 10}, max_connections: 2, devices: [kitchen-*]}
  - match: {roles: operator, issuer: https://idp.test}
    grant: {tools: [calculator]}
`);

  it('reads rules, and a file of rules alone', () => {
    expect(oidc.map((rule) => rule.name)).toEqual(['admins', 'oidc[1]', 'oidc[2]']);
    expect(oidc[1].grant).toMatchObject({ llm: false, toolCallsPerMinute: 10, maxConnections: 2, restrictsTools: true });
    expect(oidc[1].grant.devices?.('kitchen-1')).toBe(true);
    expect(parse('tokens: []').oidc).toEqual([]);
  });

  it('matches every condition, each by any of its values; the first matching rule decides', () => {
    expect(grantByRules(oidc, facts({ groups: ['staff', 'admins'] }))).toBe(oidc[0].grant);
    expect(grantByRules(oidc, facts({ client_id: 'agent' }, ['tools:list']))).toBe(oidc[1].grant);
    expect(grantByRules(oidc, facts({ azp: 'agent' }, ['tools:read']))).toBe(oidc[1].grant);
    expect(grantByRules(oidc, facts({ client_id: 'other' }, ['tools:read']))).toBeUndefined();
    expect(grantByRules(oidc, facts({ realm_access: { roles: ['operator'] } }))).toBe(oidc[2].grant);
    expect(ruleMatches({ roles: ['operator'] }, facts({ roles: 'operator' }))).toBe(true);
    expect(grantByRules(oidc, facts({}))).toBeUndefined();
  });

  it('tells which scopes would grant a tool, and every scope named', () => {
    expect(scopesForTool(oidc, 'get_weather')).toEqual(['tools:read', 'tools:list']);
    expect(scopesForTool(oidc, 'calculator')).toEqual([]);
    expect(scopesOfRules(oidc)).toEqual(['tools:read', 'tools:list']);
  });

  it.each([
    ['tokens: []\noidc: {match: {}}', /oidc must be a list of rules/],
    ['oidc: [{match: {scope: a}, grant: {tool: [x]}}]', /oidc\[0\]: grant: unknown key "tool"/],
    ['oidc: [{match: {scopes: a}}]', /oidc\[0\]: match: unknown key "scopes"/],
    ['oidc: [{match: {}}]', /oidc\[0\]: match must be an object with at least one of/],
    ['oidc: [{match: {sub: [1]}}]', /match.sub must be a non-empty string or list of strings/],
    ['oidc: [{match: {sub: a}, grant: {protocols: [ftp]}}]', /grant: protocols must be a list of/],
    ['oidc: [{match: {sub: a}, why: x}]', /unknown key "why"/],
    ['tokens: []\nextra: 1', /unknown key "extra"/],
  ])('refuses %s', (text, problem) => {
    expect(() => parse(text)).toThrow(TokensFileError);
    expect(() => parse(text)).toThrow(problem);
  });
});
