import { Logger } from '@nestjs/common';
import { createHash } from 'crypto';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { loadGatewayConfig } from '../../config/gateway-config';
import { ProtocolRegistry } from '../protocols/protocol-registry';
import { AccessTokenService } from './access-token.service';
import { FULL_ACCESS, NO_ACCESS } from './grant';
import { parseTokensDocument, parseTokensFile, TokensFileError } from './tokens-file';
import { toolMatcher } from './tool-pattern';

/** What the gateway's protocols would be: a token's `protocols` are checked against what is served. */
const PROTOCOLS = ['llm', 'mcp', 'litemcp', 'utcp'];

/** The problems of a file, its protocols checked against `protocols` (`null`: not yet known). */
const problemsOf = (text: string, protocols: readonly string[] | null = PROTOCOLS): string[] => {
  try {
    parseTokensFile(text, 'tokens.yaml', protocols ?? undefined);
  } catch (error) {
    if (error instanceof TokensFileError) return error.problems;
    throw error;
  }
  return [];
};

describe('toolMatcher', () => {
  it('matches names and globs where * is any run of characters, dots included, and nothing else is special', () => {
    const matches = toolMatcher(['get_*', 'device.*', 'calculator']);
    expect(['get_current_time', 'get_', 'device.light.set', 'calculator'].every(matches)).toBe(true);
    expect(['calculator2', 'xget_time', 'device', 'devicex.y', 'set_response_language'].some(matches)).toBe(false);
    expect(toolMatcher(['a.b'])('aXb')).toBe(false);
    expect(toolMatcher([])('anything')).toBe(false);
  });

  it('matches resource URIs, their characters standing for themselves', () => {
    const matches = toolMatcher(['file:///srv/share/*', 'demo://resource/static/*', 'db://q?x=1+2&y=%20*', 'note://a.b/(c)|[d]^$']);
    expect(['file:///srv/share/', 'file:///srv/share/a/b.txt', 'demo://resource/static/1', 'db://q?x=1+2&y=%20z', 'note://a.b/(c)|[d]^$'].every(matches)).toBe(
      true,
    );
    expect(
      ['file:///srv/other', 'file:///srv/shareX', 'demo://resource/dynamic/1', 'db://q?x=1 2&y=%20', 'db://qXx=1+2&y=%20', 'note://aXb/(c)|[d]^$'].some(
        matches,
      ),
    ).toBe(false);
    expect(toolMatcher(['x+'])('xx')).toBe(false);
    expect(toolMatcher(['*'])('any://thing?at=all#really')).toBe(true);
  });
});

describe('parseTokensFile', () => {
  it('reads YAML and JSON, with absent keys meaning no restriction', () => {
    const [kitchen, agent] = parseTokensFile(
      `tokens:
  - name: kitchen-speaker
    token: "s3cret-kitchen"
    protocols: [llm, mcp]
    tools: ["get_*", "device.*"]
    llm: false
    rate_limits: { turns_per_minute: 30, tool_calls_per_minute: 120 }
    max_connections: 5
  - name: agent
    sha256: "${createHash('sha256').update('agent-token').digest('hex')}"
`,
      'tokens.yaml',
    );
    expect(kitchen.grant).toMatchObject({
      name: 'kitchen-speaker',
      llm: false,
      turnsPerMinute: 30,
      toolCallsPerMinute: 120,
      maxConnections: 5,
      restrictsTools: true,
    });
    expect([...kitchen.grant.protocols!]).toEqual(['llm', 'mcp']);
    expect(kitchen.grant.mayUseTool('get_weather')).toBe(true);
    expect(kitchen.grant.mayUseTool('calculator')).toBe(false);
    expect(agent.grant).toMatchObject({ name: 'agent', llm: true, protocols: undefined, restrictsTools: false });
    expect(agent.grant.mayUseTool('calculator')).toBe(true);
    expect(agent.digest.equals(createHash('sha256').update('agent-token').digest())).toBe(true);
    expect(parseTokensFile('{"tokens": [{"name": "j", "token": "json-token"}]}', 'tokens.json')[0].name).toBe('j');
  });

  it("reads budgets: limits over all the principal's devices, and per_device limits of each", () => {
    const [home, free] = parseTokensFile(
      `tokens:
  - name: home
    token: home-secret-1
    budgets: {llm_tokens_per_month: 1000000, tts_chars_per_day: 20000, per_device: {llm_tokens_per_day: 20000, stt_seconds_per_day: 600}}
  - name: free
    token: free-secret-1
`,
      'tokens.yaml',
    );
    expect(home.grant.budgets).toEqual({
      total: { llm_tokens_per_month: 1000000, tts_chars_per_day: 20000 },
      perDevice: { llm_tokens_per_day: 20000, stt_seconds_per_day: 600 },
    });
    expect(free.grant.budgets).toBeUndefined();
  });

  it('limits resources by URI glob and prompts by name glob, absent meaning all of them', () => {
    const [reader, none, open] = parseTokensFile(
      `tokens:
  - name: reader
    token: "reader-secret"
    resources: ["file:///srv/share/*", "demo://resource/static/1"]
    prompts: ["everything.simple_prompt", "docs.*"]
  - name: none
    token: "none-secret"
    resources: []
    prompts: []
  - name: open
    token: "open-secret"
`,
      'tokens.yaml',
    );
    expect(reader.grant.mayReadResource('file:///srv/share/notes/a.md')).toBe(true);
    expect(reader.grant.mayReadResource('demo://resource/static/1')).toBe(true);
    expect(reader.grant.mayReadResource('demo://resource/static/2')).toBe(false);
    expect(reader.grant.mayReadResource('file:///etc/passwd')).toBe(false);
    expect(reader.grant.mayReadResource('file:///srv/share/{path}')).toBe(true);
    expect(reader.grant.mayUsePrompt('everything.simple_prompt')).toBe(true);
    expect(reader.grant.mayUsePrompt('docs.summarize')).toBe(true);
    expect(reader.grant.mayUsePrompt('everything.complex_prompt')).toBe(false);
    expect(reader.grant.mayUseTool('calculator')).toBe(true);
    expect(none.grant.mayReadResource('demo://resource/static/1')).toBe(false);
    expect(none.grant.mayUsePrompt('everything.simple_prompt')).toBe(false);
    expect(open.grant.mayReadResource('file:///etc/passwd')).toBe(true);
    expect(open.grant.mayUsePrompt('anything.at_all')).toBe(true);
    expect(FULL_ACCESS.mayReadResource('x://y') && FULL_ACCESS.mayUsePrompt('p')).toBe(true);
    expect(NO_ACCESS.mayReadResource('x://y') || NO_ACCESS.mayUsePrompt('p')).toBe(false);
  });

  it("takes resources and prompts in an oidc rule's grant, refusing bad ones", () => {
    const { oidc } = parseTokensDocument(
      'oidc: [{match: {scope: docs}, grant: {resources: ["docs://*"], prompts: ["docs.*"]}}, {match: {scope: all}, grant: {}}]',
      'tokens.yaml',
    );
    expect(oidc[0].grant.mayReadResource('docs://guide/1')).toBe(true);
    expect(oidc[0].grant.mayReadResource('file:///etc/passwd')).toBe(false);
    expect(oidc[0].grant.mayUsePrompt('docs.summarize')).toBe(true);
    expect(oidc[0].grant.mayUsePrompt('everything.simple_prompt')).toBe(false);
    expect(oidc[1].grant.mayReadResource('file:///etc/passwd') && oidc[1].grant.mayUsePrompt('everything.simple_prompt')).toBe(true);
    expect(() => parseTokensDocument('oidc: [{match: {scope: docs}, grant: {resources: "docs://*", prompts: ["a b"]}}]', 'tokens.yaml')).toThrow(
      /oidc\[0\]: grant: resources must be a list of resource URIs and globs[\s\S]*oidc\[0\]: grant: prompts must be a list of prompt names and globs/,
    );
    expect(() => parseTokensDocument('oidc: [{match: {scope: docs}, grant: {resource: ["docs://*"]}}]', 'tokens.yaml')).toThrow(
      /grant: unknown key "resource" \(known: protocols, tools, resources, prompts,/,
    );
  });

  it.each([
    ['not YAML', 'tokens: [', /not YAML or JSON/],
    ['no tokens list', 'users: []', /must hold a "tokens" list/],
    ['an entry that is not an object', 'tokens: [kitchen]', /tokens\[0\]: must be an object/],
    ['a misspelt key', 'tokens: [{name: a, token: abcdefgh, tool: ["x"]}]', /tokens\[0\] "a": unknown key "tool"/],
    ['both token and sha256', `tokens: [{name: a, token: abcdefgh, sha256: "${'0'.repeat(64)}"}]`, /exactly one of token and sha256/],
    ['neither', 'tokens: [{name: a}]', /exactly one of token and sha256/],
    ['a short token', 'tokens: [{name: a, token: abc}]', /at least 8 characters/],
    ['a bad digest', 'tokens: [{name: a, sha256: "abc"}]', /64 hex digits/],
    ['a bad name', 'tokens: [{name: "a b", token: abcdefgh}]', /name must be/],
    ['an unknown protocol', 'tokens: [{name: a, token: abcdefgh, protocols: [http]}]', /protocols must be a list of llm, mcp, litemcp, utcp/],
    ['a bad tool pattern', 'tokens: [{name: a, token: abcdefgh, tools: ["get time"]}]', /tools must be a list/],
    [
      'resources not a list',
      'tokens: [{name: a, token: abcdefgh, resources: "file:///srv/*"}]',
      /tokens\[0\] "a": resources must be a list of resource URIs and globs \("file:\/\/\/srv\/\*": no spaces, at most 1024 characters\)/,
    ],
    [
      'a resource with a space',
      'tokens: [{name: a, token: abcdefgh, resources: ["file:///my docs/*"]}]',
      /resources must be a list of resource URIs and globs/,
    ],
    ['an empty resource', 'tokens: [{name: a, token: abcdefgh, resources: [""]}]', /resources must be a list of resource URIs and globs/],
    [
      'a resource with a control character',
      'tokens: [{name: a, token: abcdefgh, resources: ["file:///a\\tb"]}]',
      /resources must be a list of resource URIs and globs/,
    ],
    ['a resource that is not a string', 'tokens: [{name: a, token: abcdefgh, resources: [42]}]', /resources must be a list of resource URIs and globs/],
    [
      'a too long resource',
      `tokens: [{name: a, token: abcdefgh, resources: ["x://${'a'.repeat(1021)}"]}]`,
      /resources must be a list of resource URIs and globs/,
    ],
    [
      'a bad prompt pattern',
      'tokens: [{name: a, token: abcdefgh, prompts: ["simple prompt"]}]',
      /tokens\[0\] "a": prompts must be a list of prompt names and globs/,
    ],
    ['prompts not a list', 'tokens: [{name: a, token: abcdefgh, prompts: true}]', /prompts must be a list of prompt names and globs/],
    ['a misspelt resources key', 'tokens: [{name: a, token: abcdefgh, resource: ["x://*"]}]', /unknown key "resource"/],
    ['llm not boolean', 'tokens: [{name: a, token: abcdefgh, llm: "no"}]', /llm must be true or false/],
    ['a zero limit', 'tokens: [{name: a, token: abcdefgh, rate_limits: {turns_per_minute: 0}}]', /turns_per_minute must be a positive integer/],
    ['an unknown limit', 'tokens: [{name: a, token: abcdefgh, rate_limits: {calls: 3}}]', /rate_limits: unknown key "calls"/],
    ['a bad max_connections', 'tokens: [{name: a, token: abcdefgh, max_connections: -1}]', /max_connections must be a positive integer/],
    ['budgets not an object', 'tokens: [{name: a, token: abcdefgh, budgets: 100}]', /tokens\[0\] "a": budgets must be an object/],
    [
      'an unknown budget',
      'tokens: [{name: a, token: abcdefgh, budgets: {tokens_per_day: 3}}]',
      /budgets: unknown key "tokens_per_day" \(known: llm_tokens_per_day/,
    ],
    ['a fractional budget', 'tokens: [{name: a, token: abcdefgh, budgets: {tts_chars_per_day: 2.5}}]', /budgets.tts_chars_per_day must be a positive integer/],
    [
      'a bad per_device budget',
      'tokens: [{name: a, token: abcdefgh, budgets: {per_device: {stt_seconds_per_week: 3}}}]',
      /budgets.per_device: unknown key "stt_seconds_per_week"/,
    ],
    ['per_device not an object', 'tokens: [{name: a, token: abcdefgh, budgets: {per_device: [1]}}]', /budgets.per_device must be an object of limits/],
    [
      'a bad budget in an oidc grant',
      'oidc: [{match: {scope: x}, grant: {budgets: {llm_tokens_per_day: 0}}}]',
      /oidc\[0\]: grant: budgets.llm_tokens_per_day must be a positive integer/,
    ],
    ['a name used twice', 'tokens: [{name: a, token: abcdefgh}, {name: a, token: ijklmnop}]', /tokens\[1\] "a": the name is used twice/],
    ['a token used twice', 'tokens: [{name: a, token: abcdefgh}, {name: b, token: abcdefgh}]', /same token as an earlier entry/],
  ])('refuses %s, saying where', (_case, text, problem) => {
    expect(problemsOf(text)).toEqual(expect.arrayContaining([expect.stringMatching(problem)]));
  });

  it('takes any protocol names until the protocols served are known, but only names', () => {
    expect(problemsOf('tokens: [{name: a, token: abcdefgh, protocols: [echo, mcp]}]', null)).toEqual([]);
    for (const protocols of ['[""]', '[1]', 'mcp']) {
      expect(problemsOf(`tokens: [{name: a, token: abcdefgh, protocols: ${protocols}}]`, null)).toEqual([
        'tokens[0] "a": protocols must be a list of protocol names',
      ]);
    }
  });

  it('reports every problem of a file at once', () => {
    expect(problemsOf('tokens: [{name: a, token: abc, llm: 1}, {name: b}]')).toHaveLength(3);
  });
});

describe('AccessTokenService with AUTH_TOKENS_FILE', () => {
  let dir: string;
  let path: string;
  const write = (text: string) => writeFileSync(path, text, { mode: 0o600 });
  const service = (settings: Record<string, string> = {}) => new AccessTokenService(loadGatewayConfig({ AUTH_TOKENS_FILE: path, ...settings }));

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'vtg-tokens-'));
    path = join(dir, 'tokens.yaml');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("names a file token's principal after it, keeps AUTH_TOKENS at full access, and refuses everyone else", () => {
    write('tokens: [{name: kitchen, token: kitchen-secret, tools: [get_current_time]}]');
    const tokens = service({ AUTH_TOKENS: 'shared-secret' });
    const kitchen = tokens.authenticate('kitchen-secret');
    expect(kitchen).toEqual({ ok: true, principal: 'name:kitchen' });
    expect(tokens.grantOf('name:kitchen').mayUseTool('calculator')).toBe(false);
    const shared = tokens.authenticate('shared-secret');
    expect(shared.ok && tokens.grantOf(shared.principal)).toBe(FULL_ACCESS);
    expect(tokens.authenticate('nope')).toMatchObject({ ok: false, status: 403 });
    expect(tokens.authenticate(undefined)).toMatchObject({ ok: false, status: 401 });
  });

  it('turns auth on with a file alone, even one without tokens', () => {
    write('tokens: []');
    expect(service().enabled).toBe(true);
    expect(service().authenticate(undefined)).toMatchObject({ ok: false, status: 401 });
  });

  it('accepts file tokens in every realm', () => {
    write('tokens: [{name: agent, token: agent-secret}]');
    const tokens = service();
    tokens.defineRealm('mcp', ['mcp-only']);
    expect(tokens.authenticate('agent-secret', 'mcp')).toEqual({ ok: true, principal: 'name:agent' });
  });

  it('stops the boot naming the file and the problem', () => {
    write('tokens: [{name: a, token: abc}]');
    expect(() => service()).toThrow(/AUTH_TOKENS_FILE .*tokens\.yaml is invalid:\n {2}- tokens\[0\] "a": token must be a string of at least 8 characters/);
    rmSync(path);
    expect(() => service()).toThrow(/cannot be read/);
  });

  it('reloads: a good file changes live grants, a removed token loses everything, a bad file keeps the previous tokens', () => {
    write('tokens: [{name: kitchen, token: kitchen-secret, tools: [get_current_time]}, {name: old, token: old-secret}]');
    const tokens = service();
    write('tokens: [{name: kitchen, token: kitchen-secret, tools: [calculator]}]');
    expect(tokens.reload()).toBe(true);
    expect(tokens.grantOf('name:kitchen').mayUseTool('calculator')).toBe(true);
    expect(tokens.grantOf('name:old')).toBe(NO_ACCESS);
    expect(tokens.authenticate('old-secret')).toMatchObject({ ok: false, status: 403 });
    write('tokens: [{name: kitchen}]');
    expect(tokens.reload()).toBe(false);
    expect(tokens.grantOf('name:kitchen').mayUseTool('calculator')).toBe(true);
    expect(tokens.reload()).toBe(false);
  });

  it('checks the protocols a token names against the registry once every module declared its own, and on every reload', () => {
    const registry = new ProtocolRegistry();
    const withRegistry = () => new AccessTokenService(loadGatewayConfig({ AUTH_TOKENS_FILE: path }), registry);
    write('tokens: [{name: a, token: abcdefgh, protocols: [echo]}]');
    const early = withRegistry();
    registry.declare({ name: 'mcp' });
    expect(() => early.onApplicationBootstrap()).toThrow(/tokens\[0\] "a": protocols must be a list of mcp$/m);
    registry.declare({ name: 'echo' });
    const tokens = withRegistry();
    tokens.onApplicationBootstrap();
    expect(tokens.grantOf('name:a').protocols).toEqual(new Set(['echo']));
    write('tokens: [{name: a, token: abcdefgh, protocols: [ftp]}]');
    const errors = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    try {
      expect(tokens.reload()).toBe(false);
      expect(errors).toHaveBeenCalledWith(expect.stringMatching(/protocols must be a list of mcp, echo\nKeeping the 1 token/));
    } finally {
      errors.mockRestore();
    }
    expect(tokens.grantOf('name:a').protocols).toEqual(new Set(['echo']));
  });

  it('warns when the file is readable by others', () => {
    write('tokens: []');
    chmodSync(path, 0o644);
    const spy = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    try {
      service();
      expect(spy).toHaveBeenCalledWith(expect.stringMatching(/readable by every user/));
      spy.mockClear();
      chmodSync(path, 0o600);
      service();
      expect(spy).not.toHaveBeenCalled();
    } finally {
      spy.mockRestore();
    }
  });
});
