import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolRegistryService } from '../../src/core/tools/tool-registry.service';
import { RunningGateway, startGateway } from '../support/gateway';
import { ModernWebSocketTransport } from '../support/modern-websocket-transport';
import { EVERYTHING_SERVER, serversFile, until, upstreamIn } from '../support/upstreams';

const TOKEN = 'token-of-the-revision-tests';
const headers = { Authorization: `Bearer ${TOKEN}` };

/**
 * One `/mcp`, every revision: a 2026-07-28 client (SDK 2.x, `server/discover`, no session) and a
 * 2025-03-26 client (SDK 1.x, `initialize` and a session) both list and call tools, read
 * resources and get prompts of an upstream server through the gateway.
 */
describe('MCP revisions on /mcp: 2026-07-28 beside 2025-03-26', () => {
  let gateway: RunningGateway;
  let servers: ReturnType<typeof serversFile>;
  const closing: { close(): Promise<void> }[] = [];

  beforeAll(async () => {
    servers = serversFile({ everything: EVERYTHING_SERVER });
    gateway = await startGateway({ AUTH_TOKENS: TOKEN, MCP_SERVERS_FILE: servers.path });
    await upstreamIn(gateway, 'everything', 'connected');
  }, 60_000);

  afterAll(async () => {
    await Promise.all(closing.map((client) => client.close()));
    await gateway?.close();
    servers?.remove();
  });

  async function modernClient(): Promise<ModernClient> {
    const client = new ModernClient({ name: 'modern-e2e', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await client.connect(new ModernTransport(new URL(gateway.http('/mcp')), { requestInit: { headers } }));
    closing.push(client);
    return client;
  }

  /** Registers `name` while `client` listens for tool changes: it must be told, and find the tool listed. */
  async function expectToldOfNewTool(client: ModernClient, name: string): Promise<void> {
    let changes = 0;
    client.setNotificationHandler('notifications/tools/list_changed', () => void (changes += 1));
    const subscription = await client.listen({ toolsListChanged: true });
    const registry = gateway.app.get(ToolRegistryService);
    registry.register({ name, description: 'Appears while the client listens', inputSchema: { type: 'object' }, source: 'module', handler: () => 'ok' });
    try {
      await until(() => changes > 0, 5_000, 'notifications/tools/list_changed');
      expect((await client.listTools()).tools.map((tool) => tool.name)).toContain(name);
    } finally {
      registry.unregister(name);
      await subscription.close();
    }
  }

  async function legacyClient(): Promise<Client> {
    const client = new Client({ name: 'legacy-e2e', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(gateway.http('/mcp')), { requestInit: { headers } });
    // The SDK 1.x client asks for its latest revision; this one speaks 2025-03-26.
    transport.setProtocolVersion('2025-03-26');
    await client.connect(transport);
    closing.push(client);
    return client;
  }

  it('serves a 2026-07-28 client: discovery, tools, resources and prompts, without a session', async () => {
    const client = await modernClient();
    expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(expect.arrayContaining(['calculator', 'everything.echo']));
    const sum = await client.callTool({ name: 'calculator', arguments: { a: 2, b: 5, operation: 'add' } });
    expect(JSON.stringify(sum.content)).toContain('7');
    const echo = await client.callTool({ name: 'everything.echo', arguments: { message: 'modern' } });
    expect(echo.content).toEqual([{ type: 'text', text: 'Echo: modern' }]);
    const document = await client.readResource({ uri: 'demo://resource/dynamic/text/2' });
    expect(document.contents[0]).toMatchObject({ uri: 'demo://resource/dynamic/text/2' });
    const prompt = await client.getPrompt({ name: 'everything.args-prompt', arguments: { city: 'Oslo' } });
    expect(prompt.messages[0].content).toEqual({ type: 'text', text: "What's weather in Oslo?" });
  });

  it('answers a 2026-07-28 client the way MCP answers errors: an unknown tool, an unknown URI', async () => {
    const client = await modernClient();
    await expect(client.callTool({ name: 'no_such_tool', arguments: {} })).rejects.toMatchObject({ code: -32602 });
    // 2026-07-28 answers an unknown URI with -32602 and the URI in `data` (2025 revisions: -32002).
    await expect(client.readResource({ uri: 'demo://nowhere' })).rejects.toMatchObject({ code: -32602, data: { uri: 'demo://nowhere' } });
    const failed = await client.callTool({ name: 'calculator', arguments: { a: 'x' } });
    expect(failed.isError).toBe(true);
  });

  it("relays an upstream's progress to a 2026-07-28 client in the call's own response stream", async () => {
    const client = await modernClient();
    const steps: number[] = [];
    const result = await client.callTool(
      { name: 'everything.trigger_long_running_operation', arguments: { duration: 0.45, steps: 3 } },
      { onprogress: (progress) => steps.push(progress.progress) },
    );
    expect(result.isError).toBeFalsy();
    // The last update leaves the upstream together with the result; the SDK 2.x client may take
    // the result first and drop it (the gateway sends it first), so only the earlier ones are sure.
    expect(steps.slice(0, 2)).toEqual([1, 2]);
  });

  it('tells a 2026-07-28 client listening with subscriptions/listen when the tools change', async () => {
    const client = await modernClient();
    await expectToldOfNewTool(client, 'revision_probe');
    expect((await client.listTools()).tools.map((tool) => tool.name)).not.toContain('revision_probe');
  });

  it('ends the call whose upstream asks a 2026-07-28 client what it did not declare with -32021, with the reason, instead of hanging', async () => {
    const client = await modernClient();
    await expect(client.callTool({ name: 'everything.trigger_elicitation_request', arguments: {} })).rejects.toMatchObject({
      code: -32021,
      message: expect.stringContaining('did not declare the elicitation capability'),
      data: { requiredCapabilities: { elicitation: {} } },
    });
  });

  it('serves a 2026-07-28 client over a plain WebSocket: tools, resources, progress and subscriptions/listen', async () => {
    const client = new ModernClient({ name: 'modern-ws-e2e', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await client.connect(new ModernWebSocketTransport(gateway.ws(`/mcp?token=${TOKEN}`)));
    closing.push(client);
    expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
    expect((await client.callTool({ name: 'everything.echo', arguments: { message: 'socket' } })).content).toEqual([{ type: 'text', text: 'Echo: socket' }]);
    expect((await client.readResource({ uri: 'demo://resource/dynamic/text/4' })).contents[0]).toMatchObject({ uri: 'demo://resource/dynamic/text/4' });
    const steps: number[] = [];
    await client.callTool(
      { name: 'everything.trigger_long_running_operation', arguments: { duration: 0.45, steps: 3 } },
      { onprogress: (progress) => steps.push(progress.progress) },
    );
    expect(steps.slice(0, 2)).toEqual([1, 2]);
    await expectToldOfNewTool(client, 'socket_probe');
  });

  it('serves a 2025-03-26 client on the same path: initialize, a session, tools, resources and prompts', async () => {
    const client = await legacyClient();
    expect(client.getServerVersion()?.name).toBeDefined();
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(expect.arrayContaining(['calculator', 'everything.echo']));
    expect((await client.callTool({ name: 'everything.echo', arguments: { message: 'old' } })).content).toEqual([{ type: 'text', text: 'Echo: old' }]);
    expect((await client.readResource({ uri: 'demo://resource/dynamic/text/2' })).contents).toHaveLength(1);
    expect((await client.getPrompt({ name: 'everything.simple-prompt' })).messages.length).toBeGreaterThan(0);
  });

  it('refuses a 2026-07-28 request without a token, as the 2025 revisions are', async () => {
    const answer = await fetch(gateway.http('/mcp'), {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'server/discover', params: {} }),
    });
    expect(answer.status).toBe(401);
  });
});
