import type { Resource } from '@modelcontextprotocol/sdk/types.js';
import type { AccessTokenService } from '../auth/access-token.service';
import { FULL_ACCESS, Grant } from '../auth/grant';
import type { RateLimitService } from '../limits/rate-limit.service';
import { RateLimitedError } from '../limits/rate-limited.error';
import { ContextCatalogueService } from './context-catalogue.service';
import { ContextListKind, ContextSource, UnknownContextError } from './context-source';

const signal = new AbortController().signal;

/** A source whose reads answer with its own id, so a test sees which source was asked. */
function source(id: string, rank: number, offers: Partial<Pick<ContextSource, 'resources' | 'resourceTemplates' | 'prompts'>>): ContextSource {
  const answer = (what: string) => Promise.resolve({ [id]: what }) as never;
  return {
    id,
    label: id,
    rank,
    resources: offers.resources ?? [],
    resourceTemplates: offers.resourceTemplates ?? [],
    prompts: offers.prompts ?? [],
    readResource: (uri) => answer(uri),
    getPrompt: (name) => answer(name),
    complete: (params) => answer(JSON.stringify(params.ref)),
    subscribe: () => Promise.resolve(() => undefined),
  };
}

const resource = (uri: string): Resource => ({ uri, name: uri });

describe('ContextCatalogueService', () => {
  it('lists each URI once, owned by the source ranked first whatever the order they came in', async () => {
    const catalogue = new ContextCatalogueService();
    catalogue.set(source('second', 1, { resources: [resource('file:///a'), resource('file:///b')] }));
    catalogue.set(source('first', 0, { resources: [resource('file:///a')] }));
    expect(catalogue.listResources(undefined).map((r) => r.uri)).toEqual(['file:///a', 'file:///b']);
    expect(await catalogue.readResource(undefined, 'file:///a', { signal })).toEqual({ first: 'file:///a' });
    expect(await catalogue.readResource(undefined, 'file:///b', { signal })).toEqual({ second: 'file:///b' });
  });

  it('reads a URI no source lists from the first source whose template matches it', async () => {
    const catalogue = new ContextCatalogueService();
    catalogue.set(source('notes', 0, { resourceTemplates: [{ uriTemplate: 'notes://{id}', name: 'note' }] }));
    catalogue.set(source('broken', 1, { resourceTemplates: [{ uriTemplate: 'x://{', name: 'unparseable' }] }));
    expect(await catalogue.readResource(undefined, 'notes://42', { signal })).toEqual({ notes: 'notes://42' });
    await expect(catalogue.readResource(undefined, 'other://42', { signal })).rejects.toThrow(new UnknownContextError('resource', 'other://42'));
    expect(catalogue.listResourceTemplates(undefined)).toHaveLength(2);
  });

  it('sends prompts and completions to the source that offers the prompt or template', async () => {
    const catalogue = new ContextCatalogueService();
    catalogue.set(source('a', 0, { prompts: [{ name: 'a.greet' }], resourceTemplates: [{ uriTemplate: 'a://{x}', name: 'x' }] }));
    catalogue.set(source('b', 1, { prompts: [{ name: 'b.greet' }] }));
    expect(await catalogue.getPrompt(undefined, 'b.greet', undefined, { signal })).toEqual({ b: 'b.greet' });
    expect(await catalogue.complete(undefined, { ref: { type: 'ref/resource', uri: 'a://{x}' }, argument: { name: 'x', value: '' } }, { signal })).toEqual({
      a: '{"type":"ref/resource","uri":"a://{x}"}',
    });
    await expect(catalogue.getPrompt(undefined, 'c.greet', undefined, { signal })).rejects.toThrow('Unknown prompt "c.greet"');
    await expect(
      catalogue.complete(undefined, { ref: { type: 'ref/resource', uri: 'z://{x}' }, argument: { name: 'x', value: '' } }, { signal }),
    ).rejects.toThrow('Unknown resource template "z://{x}"');
  });

  it("narrows lists and requests to a named token's resources and prompts", async () => {
    const narrow: Grant = {
      ...FULL_ACCESS,
      name: 'narrow',
      mayReadResource: (uri) => uri.startsWith('file:///public/'),
      mayUsePrompt: (name) => name === 'a.ok',
    };
    const tokens = { grantOf: (principal?: string) => (principal === 'narrow' ? narrow : FULL_ACCESS) } as AccessTokenService;
    const catalogue = new ContextCatalogueService(tokens);
    catalogue.set(
      source('a', 0, {
        resources: [resource('file:///public/x'), resource('file:///private/y')],
        resourceTemplates: [{ uriTemplate: 'file:///private/{name}', name: 'private' }],
        prompts: [{ name: 'a.ok' }, { name: 'a.secret' }],
      }),
    );
    expect(catalogue.listResources('narrow').map((r) => r.uri)).toEqual(['file:///public/x']);
    expect(catalogue.listResourceTemplates('narrow')).toEqual([]);
    expect(catalogue.listPrompts('narrow').map((p) => p.name)).toEqual(['a.ok']);
    await expect(catalogue.readResource('narrow', 'file:///private/y', { signal })).rejects.toThrow(UnknownContextError);
    await expect(catalogue.getPrompt('narrow', 'a.secret', undefined, { signal })).rejects.toThrow(UnknownContextError);
  });

  it('counts each request against the rate limit, and tells its watchers how it ended', async () => {
    let admitted = 0;
    const rateLimits = {
      admitToolCall: (principal?: string) => {
        admitted += 1;
        if (principal === 'over') throw new RateLimitedError('tool calls', 1, 60_000, 1000);
      },
    } as unknown as RateLimitService;
    const catalogue = new ContextCatalogueService(undefined, rateLimits);
    const ended: string[] = [];
    catalogue.watch({ contextRequestStarted: (request) => ({ ended: (outcome) => ended.push(`${request.kind} ${request.target} ${outcome}`) }) });
    catalogue.set(source('a', 0, { resources: [resource('file:///r')], prompts: [{ name: 'a.p' }] }));
    await catalogue.readResource('me', 'file:///r', { signal });
    await catalogue.getPrompt('me', 'a.p', undefined, { signal });
    await expect(catalogue.readResource('me', 'file:///none', { signal })).rejects.toThrow(UnknownContextError);
    await expect(catalogue.readResource('over', 'file:///r', { signal })).rejects.toThrow(RateLimitedError);
    expect(admitted).toBe(4);
    expect(ended).toEqual(['resource file:///r ok', 'prompt a.p ok', 'resource file:///none not_found', 'resource file:///r rate_limited']);
    catalogue.listResources('over');
    expect(admitted).toBe(4);
  });

  it('announces a list when a source replaces or withdraws entries of it, not when it offers none', () => {
    const catalogue = new ContextCatalogueService();
    const announced: ContextListKind[] = [];
    catalogue.changes.subscribe((kind) => announced.push(kind));
    catalogue.set(source('empty', 0, {}));
    expect(announced).toEqual([]);
    const prompts = [{ name: 'a.p' }];
    const withPrompts = source('a', 1, { prompts });
    catalogue.set(withPrompts);
    expect(announced).toEqual(['prompts']);
    catalogue.set({ ...withPrompts, resources: [resource('file:///r')] });
    expect(announced).toEqual(['prompts', 'resources']);
    catalogue.remove('a');
    expect(announced).toEqual(['prompts', 'resources', 'resources', 'prompts']);
    catalogue.remove('a');
    expect(announced).toHaveLength(4);
  });
});
