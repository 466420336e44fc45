import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, LoggingMessageNotificationSchema, Progress } from '@modelcontextprotocol/sdk/types.js';
import { mkdtempSync, rmSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { ToolRegistryService } from '../../src/core/tools/tool-registry.service';
import { RunningGateway, startGateway } from '../support/gateway';
import { ModernHttpUpstream, MODERN_REVISION, MODERN_STDIO_SOURCE } from '../support/modern-upstream';
import { EVERYTHING_SERVER, serversFile, until, upstreamIn, upstreamStatus } from '../support/upstreams';

const GATEWAY_TOKEN = 'gateway-token-of-the-modern-upstream-tests';

/**
 * Upstreams that speak only MCP's 2026-07-28 revision (the official SDK 2.x, 2025 refused),
 * over Streamable HTTP and stdio, beside one that speaks only 2025, all served through the
 * gateway's `/mcp` to a 2025 client: each upstream is spoken to in its own revision.
 */
describe('Upstreams of the 2026-07-28 revision through /mcp', () => {
  let upstream: ModernHttpUpstream;
  let gateway: RunningGateway;
  let servers: ReturnType<typeof serversFile>;
  let folder: string;
  const clients: Client[] = [];
  /** What the gateway asked the downstream client, in order. */
  const asked: string[] = [];

  /** A 2025 client of the gateway that answers elicitation with `name`. */
  async function client(name = 'Ada'): Promise<Client> {
    const mcp = new Client({ name: 'modern-upstream-e2e', version: '1.0.0' }, { capabilities: { elicitation: {} } });
    mcp.setRequestHandler(ElicitRequestSchema, (request) => {
      asked.push(request.params.message);
      return { action: 'accept', content: { name } };
    });
    await mcp.connect(
      new StreamableHTTPClientTransport(new URL(gateway.http('/mcp')), { requestInit: { headers: { Authorization: `Bearer ${GATEWAY_TOKEN}` } } }),
    );
    clients.push(mcp);
    return mcp;
  }

  const textOf = (result: Awaited<ReturnType<Client['callTool']>>) => (result.content as { type: string; text?: string }[])[0]?.text;

  beforeAll(async () => {
    upstream = await ModernHttpUpstream.start();
    folder = mkdtempSync(join(tmpdir(), 'modern-upstream-'));
    const script = join(folder, 'modern-stdio.js');
    writeFileSync(script, MODERN_STDIO_SOURCE);
    servers = serversFile({
      modern: { url: upstream.url() },
      local: { command: process.execPath, args: [script] },
      everything: EVERYTHING_SERVER,
    });
    gateway = await startGateway({ AUTH_TOKENS: GATEWAY_TOKEN, MCP_SERVERS_FILE: servers.path });
    await upstreamIn(gateway, 'modern', 'connected');
    await upstreamIn(gateway, 'local', 'connected');
    await upstreamIn(gateway, 'everything', 'connected');
  }, 60_000);

  afterAll(async () => {
    await Promise.all(clients.map((mcp) => mcp.close()));
    await gateway?.close();
    await upstream?.stop();
    servers?.remove();
    if (folder) rmSync(folder, { recursive: true, force: true });
  });

  it('connects to a 2026-only server over Streamable HTTP, in 2026, and says so on /health', async () => {
    expect(await upstreamIn(gateway, 'modern', 'connected')).toMatchObject({ transport: 'streamable-http', tools: 3, resources: 1, prompts: 1 });
    // Never an `initialize`: every request of the gateway's named the 2026 revision.
    expect(upstream.revisions.length).toBeGreaterThan(0);
    expect(new Set(upstream.revisions)).toEqual(new Set([MODERN_REVISION]));
  });

  it('lists and calls its tools, reads its resource and gets its prompt for a 2025 client', async () => {
    const mcp = await client();
    const { tools } = await mcp.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(expect.arrayContaining(['modern.revision', 'modern.ask_name']));
    expect(textOf(await mcp.callTool({ name: 'modern.revision', arguments: {} }))).toBe(MODERN_REVISION);
    expect(await mcp.readResource({ uri: 'modern://greeting' })).toMatchObject({
      contents: [{ uri: 'modern://greeting', mimeType: 'text/plain', text: 'Hello from 2026' }],
    });
    expect(await mcp.getPrompt({ name: 'modern.greet' })).toMatchObject({
      messages: [{ role: 'user', content: { type: 'text', text: 'Say hello the 2026 way' } }],
    });
  });

  it("relays the upstream's progress and log messages to the caller", async () => {
    const mcp = await client();
    const logs: unknown[] = [];
    mcp.setNotificationHandler(LoggingMessageNotificationSchema, ({ params }) => void logs.push(params));
    const progress: Progress[] = [];
    const result = await mcp.callTool({ name: 'modern.chatty', arguments: {} }, undefined, { onprogress: (update) => progress.push(update) });
    expect(textOf(result)).toBe('done');
    expect(progress[0]).toMatchObject({ progress: 1, total: 2 });
    expect(logs).toEqual([{ level: 'info', logger: 'chatty', data: 'half way' }]);
  });

  it("asks the calling client what the upstream's input_required answer asks, and gives the upstream its answer", async () => {
    const mcp = await client();
    asked.length = 0;
    expect(textOf(await mcp.callTool({ name: 'modern.ask_name', arguments: {} }))).toBe('Hello Ada');
    expect(asked).toEqual(['Your name?']);
  });

  it('speaks 2026 to a 2026-only server over stdio too, its questions going to the caller', async () => {
    expect(await upstreamIn(gateway, 'local', 'connected')).toMatchObject({ transport: 'stdio', tools: 2, pid: expect.any(Number) });
    const mcp = await client();
    expect(textOf(await mcp.callTool({ name: 'local.revision', arguments: {} }))).toBe(MODERN_REVISION);
    asked.length = 0;
    expect(textOf(await mcp.callTool({ name: 'local.ask_name', arguments: {} }))).toBe('Hello Ada');
    expect(asked).toEqual(['Your name?']);
  });

  it('asks each of two concurrent callers of a stdio upstream its own question (a 2026 answer names its call)', async () => {
    const [ada, grace] = await Promise.all([client('Ada'), client('Grace')]);
    const answers = await Promise.all([ada.callTool({ name: 'local.ask_name', arguments: {} }), grace.callTool({ name: 'local.ask_name', arguments: {} })]);
    expect(answers.map(textOf)).toEqual(['Hello Ada', 'Hello Grace']);
  });

  it("follows the upstream's tool list on its 2026 change stream", async () => {
    const registry = gateway.app.get(ToolRegistryService);
    upstream.addTool('late');
    await until(() => registry.get('modern.late') !== undefined, 10_000, 'the new tool to join the catalogue');
    const mcp = await client();
    expect(textOf(await mcp.callTool({ name: 'modern.late', arguments: {} }))).toBe('late');
    expect(await upstreamStatus(gateway, 'modern')).toMatchObject({ state: 'connected', tools: 4, reconnects: 0 });
  });

  it('still speaks 2025 to a server that speaks only 2025, beside them', async () => {
    const mcp = await client();
    expect(textOf(await mcp.callTool({ name: 'everything.echo', arguments: { message: 'old' } }))).toBe('Echo: old');
  });
});
