import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ResourceListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { mkdtempSync, rmSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { RunningGateway, startGateway } from '../support/gateway';
import { EVERYTHING_SERVER, serversFile, until, upstreamIn } from '../support/upstreams';

const FULL_TOKEN = 'full-token-of-the-context-tests';
const NARROW_TOKEN = 'narrow-token-of-the-context-tests';
const TEMPLATE = 'demo://resource/dynamic/text/{resourceId}';

/**
 * Resources, resource templates, prompts and completions of upstream MCP servers, served through
 * the gateway's `/mcp` to the official SDK client: the registry's reference server twice (a second
 * copy lists the same URIs and prompt names, so collisions are resolved as documented).
 */
describe('Upstream resources and prompts through /mcp', () => {
  let gateway: RunningGateway;
  let servers: ReturnType<typeof serversFile>;
  let folder: string;
  const clients: Client[] = [];

  async function client(token = FULL_TOKEN): Promise<Client> {
    const mcp = new Client({ name: 'context-e2e', version: '1.0.0' });
    await mcp.connect(new StreamableHTTPClientTransport(new URL(gateway.http('/mcp')), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
    clients.push(mcp);
    return mcp;
  }

  beforeAll(async () => {
    servers = serversFile({ everything: EVERYTHING_SERVER, twin: EVERYTHING_SERVER });
    folder = mkdtempSync(join(tmpdir(), 'context-tokens-'));
    const tokensFile = join(folder, 'tokens.yaml');
    writeFileSync(
      tokensFile,
      [
        'tokens:',
        `  - {name: full, token: ${FULL_TOKEN}}`,
        `  - {name: narrow, token: ${NARROW_TOKEN}, tools: [], resources: ["demo://resource/dynamic/text/*"], prompts: [everything.simple-prompt]}`,
      ].join('\n'),
    );
    gateway = await startGateway({ MCP_SERVERS_FILE: servers.path, AUTH_TOKENS_FILE: tokensFile });
    await upstreamIn(gateway, 'everything', 'connected');
    await upstreamIn(gateway, 'twin', 'connected');
  }, 60_000);

  afterAll(async () => {
    await Promise.all(clients.map((mcp) => mcp.close()));
    await gateway?.close();
    servers?.remove();
    rmSync(folder, { recursive: true, force: true });
  });

  it('announces resources, prompts and completions, and lists what the upstreams offer, each URI once', async () => {
    const mcp = await client();
    expect(mcp.getServerCapabilities()).toMatchObject({ resources: { listChanged: true }, prompts: { listChanged: true }, completions: {} });
    const { resources } = await mcp.listResources();
    const uris = resources.map((resource) => resource.uri);
    expect(uris).toContain('demo://resource/static/document/instructions.md');
    expect(new Set(uris).size).toBe(uris.length);
    const { resourceTemplates } = await mcp.listResourceTemplates();
    expect(resourceTemplates.map((template) => template.uriTemplate)).toEqual(expect.arrayContaining([TEMPLATE]));
    expect(resourceTemplates.filter((template) => template.uriTemplate === TEMPLATE)).toHaveLength(1);
    const status = await upstreamIn(gateway, 'everything', 'connected');
    expect(status).toMatchObject({ resources: resources.length, prompts: expect.any(Number) });
    expect(status.resource_templates).toBeGreaterThan(0);
  });

  it("lists an upstream tool with its title and annotations, and answers with its content's annotations, as the upstream sent them", async () => {
    const mcp = await client();
    const { tools } = await mcp.listTools();
    expect(tools.find((tool) => tool.name === 'everything.get_annotated_message')).toMatchObject({
      title: 'Get Annotated Message Tool',
      annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    });
    expect(tools.find((tool) => tool.name === 'calculator')).toMatchObject({ title: 'Calculator', annotations: { readOnlyHint: true } });
    const result = await mcp.callTool({ name: 'everything.get_annotated_message', arguments: { messageType: 'success', includeImage: true } });
    expect(result.content).toEqual([
      { type: 'text', text: 'Operation completed successfully', annotations: { priority: 0.7, audience: ['user'] } },
      expect.objectContaining({ type: 'image', mimeType: 'image/png', annotations: expect.any(Object) }),
    ]);
  });

  it('reads listed and templated resources, text and binary, as the upstream sent them', async () => {
    const mcp = await client();
    const document = await mcp.readResource({ uri: 'demo://resource/static/document/instructions.md' });
    expect(document.contents[0]).toMatchObject({ uri: 'demo://resource/static/document/instructions.md', text: expect.any(String) });
    const text = await mcp.readResource({ uri: 'demo://resource/dynamic/text/3' });
    expect(text.contents[0]).toMatchObject({ uri: 'demo://resource/dynamic/text/3', mimeType: 'text/plain', text: expect.stringContaining('3') });
    const blob = await mcp.readResource({ uri: 'demo://resource/dynamic/blob/2' });
    expect(blob.contents[0]).toMatchObject({ uri: 'demo://resource/dynamic/blob/2', blob: expect.any(String) });
  });

  it('answers an unknown URI with -32002 and stays usable', async () => {
    const mcp = await client();
    await expect(mcp.readResource({ uri: 'demo://nowhere/at/all' })).rejects.toMatchObject({
      code: -32002,
      message: expect.stringContaining('demo://nowhere/at/all'),
    });
    expect((await mcp.listResources()).resources.length).toBeGreaterThan(0);
  });

  it("serves each upstream's prompts under its prefix, with arguments, and the upstream's refusal of bad ones", async () => {
    const mcp = await client();
    const names = (await mcp.listPrompts()).prompts.map((prompt) => prompt.name);
    expect(names).toEqual(expect.arrayContaining(['everything.simple-prompt', 'everything.args-prompt', 'twin.simple-prompt']));
    const prompt = await mcp.getPrompt({ name: 'twin.args-prompt', arguments: { city: 'Lyon', state: 'Rhône' } });
    expect(prompt.messages[0]).toEqual({ role: 'user', content: { type: 'text', text: "What's weather in Lyon, Rhône?" } });
    const withResource = await mcp.getPrompt({ name: 'everything.resource-prompt', arguments: { resourceType: 'Text', resourceId: '1' } });
    expect(withResource.messages.some((message) => message.content.type === 'resource')).toBe(true);
    await expect(mcp.getPrompt({ name: 'everything.args-prompt', arguments: {} })).rejects.toMatchObject({ code: -32602 });
    await expect(mcp.getPrompt({ name: 'nobody.prompt' })).rejects.toMatchObject({
      code: -32602,
      message: expect.stringContaining('Unknown prompt "nobody.prompt"'),
    });
  });

  it('completes a prompt argument and a resource template variable on the upstream that offers them', async () => {
    const mcp = await client();
    const department = await mcp.complete({ ref: { type: 'ref/prompt', name: 'everything.completable-prompt' }, argument: { name: 'department', value: 'S' } });
    expect(department.completion.values).toEqual(['Sales', 'Support']);
    const member = await mcp.complete({
      ref: { type: 'ref/prompt', name: 'everything.completable-prompt' },
      argument: { name: 'name', value: '' },
      context: { arguments: { department: 'Engineering' } },
    });
    expect(member.completion.values).toEqual(['Alice', 'Bob', 'Charlie']);
    const resourceId = await mcp.complete({ ref: { type: 'ref/resource', uri: TEMPLATE }, argument: { name: 'resourceId', value: '1' } });
    expect(resourceId.completion.values.length).toBeGreaterThan(0);
  });

  it("narrows resources and prompts to a token's grant, in every list and request", async () => {
    const mcp = await client(NARROW_TOKEN);
    expect((await mcp.listResources()).resources).toEqual([]);
    // A template is listed when its uriTemplate string matches the grant: the text one, not the blob one.
    expect((await mcp.listResourceTemplates()).resourceTemplates.map((template) => template.uriTemplate)).toEqual([TEMPLATE]);
    expect((await mcp.readResource({ uri: 'demo://resource/dynamic/text/1' })).contents).toHaveLength(1);
    await expect(mcp.readResource({ uri: 'demo://resource/static/document/instructions.md' })).rejects.toMatchObject({ code: -32002 });
    expect((await mcp.listPrompts()).prompts.map((prompt) => prompt.name)).toEqual(['everything.simple-prompt']);
    await expect(mcp.getPrompt({ name: 'twin.simple-prompt' })).rejects.toMatchObject({ code: -32602 });
    await expect(
      mcp.complete({ ref: { type: 'ref/prompt', name: 'everything.completable-prompt' }, argument: { name: 'department', value: '' } }),
    ).rejects.toMatchObject({ code: -32602 });
  });

  it('counts reads, prompts and completions in the metrics, by kind and outcome', async () => {
    const metrics = await (await fetch(gateway.http('/metrics'), { headers: { Authorization: `Bearer ${FULL_TOKEN}` } })).text();
    for (const [kind, outcome] of [
      ['resource', 'ok'],
      ['resource', 'not_found'],
      ['prompt', 'ok'],
      ['prompt', 'not_found'],
      ['completion', 'ok'],
    ]) {
      expect(metrics).toMatch(new RegExp(`gateway_mcp_context_requests_total\\{kind="${kind}",outcome="${outcome}"\\} [1-9]`));
    }
  });

  it('withdraws the resources of an upstream that goes away, and announces it', async () => {
    const mcp = await client();
    let announced = 0;
    mcp.setNotificationHandler(ResourceListChangedNotificationSchema, () => void (announced += 1));
    // A GET stream carries the announcement; open it by listing once after connecting.
    await mcp.listResources();
    const { pid } = await upstreamIn(gateway, 'twin', 'connected');
    process.kill(pid, 'SIGKILL');
    await upstreamIn(gateway, 'twin', 'failed');
    await until(() => announced > 0, 10_000, 'resources/list_changed');
    expect((await mcp.listPrompts()).prompts.map((prompt) => prompt.name)).not.toContain('twin.simple-prompt');
    // The first upstream still owns its URIs.
    expect((await mcp.readResource({ uri: 'demo://resource/dynamic/text/1' })).contents).toHaveLength(1);
  }, 30_000);
});
