import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { WebSocketClientTransport } from '@modelcontextprotocol/sdk/client/websocket.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, McpError, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { ToolRegistryService } from '../../src/core/tools/tool-registry.service';
import { McpHttpSessions } from '../../src/mcp/transports/http/mcp-http-sessions.service';
import { ConnectionRegistry } from '../../src/core/ws/connection-registry';
import { RunningGateway, startGateway } from '../support/gateway';
import { provideGlobalWebSocket } from '../support/sdk-websocket';

provideGlobalWebSocket();

const TOKEN = 'mcp-secret';

/** How the official client reaches `/mcp`, with the token where each transport can carry it. */
const TRANSPORTS: [string, (gateway: RunningGateway, token: string) => Transport][] = [
  ['plain WebSocket', (gateway, token) => new WebSocketClientTransport(new URL(gateway.ws(`/mcp?token=${encodeURIComponent(token)}`)))],
  [
    'Streamable HTTP',
    (gateway, token) => new StreamableHTTPClientTransport(new URL(gateway.http('/mcp')), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }),
  ],
];

async function until(condition: () => boolean, timeoutMs = 3000): Promise<void> {
  for (let waited = 0; !condition() && waited < timeoutMs; waited += 20) await new Promise((resolve) => setTimeout(resolve, 20));
  expect(condition()).toBe(true);
}

describe.each(TRANSPORTS)('the official MCP SDK client over %s', (_name, transportTo) => {
  let gateway: RunningGateway;
  let client: Client;

  beforeAll(async () => {
    gateway = await startGateway({ MCP_WS_AUTH_TOKEN: TOKEN, MCP_WS_MAX_CONNECTIONS: 10, MCP_SERVER_NAME: 'test-gateway' });
  });
  afterAll(() => gateway.close());

  beforeEach(async () => {
    client = new Client({ name: 'sdk-e2e', version: '1.0.0' });
    await client.connect(transportTo(gateway, TOKEN));
  });
  afterEach(() => client.close());

  it("initializes with the gateway's server info", () => {
    expect(client.getServerVersion()).toEqual({ name: 'test-gateway', version: expect.stringMatching(/^\d+\.\d+\.\d+/) });
    expect(client.getServerCapabilities()).toEqual({ tools: { listChanged: true }, tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } });
  });

  it('lists the catalogue with MCP schemas', async () => {
    const { tools } = await client.listTools();
    const calculator = tools.find((tool) => tool.name === 'calculator');
    const time = tools.find((tool) => tool.name === 'get_current_time');
    expect(calculator).toMatchObject({ inputSchema: { type: 'object', properties: { a: { type: 'number' } }, required: ['a', 'b'] } });
    expect(calculator).not.toHaveProperty('outputSchema');
    expect(time?.outputSchema).toMatchObject({ type: 'object', properties: { timezone: { type: 'string' } } });
  });

  it('calls calculator and get_current_time', async () => {
    expect(await client.callTool({ name: 'calculator', arguments: { a: 2, b: 3 } })).toEqual({ content: [{ type: 'text', text: '5' }] });
    expect(await client.callTool({ name: 'calculator', arguments: { a: 7, b: 2, operation: 'divide' } })).toEqual({
      content: [{ type: 'text', text: '3.5' }],
    });
    // The SDK client checks structuredContent against the tool's output schema itself.
    const time = await client.callTool({ name: 'get_current_time', arguments: { timezone: 'Europe/London' } });
    expect(time.structuredContent).toMatchObject({ timezone: 'Europe/London', iso: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/) });
  });

  it('gets failed calls and bad arguments as isError results, an unknown tool as -32602', async () => {
    expect(await client.callTool({ name: 'calculator', arguments: { a: 1, b: 0, operation: 'divide' } })).toEqual({
      content: [{ type: 'text', text: 'Division by zero' }],
      isError: true,
    });
    expect(await client.callTool({ name: 'calculator', arguments: { a: 'one', b: 2 } })).toMatchObject({
      isError: true,
      content: [{ text: expect.stringMatching(/Invalid arguments for tool "calculator"/) }],
    });
    const unknown = await client.callTool({ name: 'nope', arguments: {} }).catch((error: unknown) => error);
    expect(unknown).toBeInstanceOf(McpError);
    expect(unknown).toMatchObject({ code: ErrorCode.InvalidParams, message: expect.stringMatching(/Unknown tool "nope"/) });
  });

  it('hears notifications/tools/list_changed when tools come and go at run time, and calls them as itself', async () => {
    const registry = gateway.app.get(ToolRegistryService);
    // Like any client, it lists the tools first; from then on it is told about changes.
    expect((await client.listTools()).tools.map((tool) => tool.name)).not.toContain('whoami');
    let changes = 0;
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      changes += 1;
    });
    registry.register({
      name: 'whoami',
      description: 'Tells the caller who it is',
      inputSchema: { type: 'object' },
      source: 'module',
      handler: (_args, context) => ({ principal: context.principal, connection: typeof context.connectionId }),
    });
    await until(() => changes === 1);
    expect((await client.listTools()).tools.map((tool) => tool.name)).toContain('whoami');
    const whoami = await client.callTool({ name: 'whoami', arguments: {} });
    expect(JSON.parse((whoami.content as { text: string }[])[0].text)).toEqual({
      principal: expect.stringMatching(/^token:[0-9a-f]{16}$/),
      connection: 'string',
    });

    registry.unregister('whoami');
    await until(() => changes === 2);
    expect((await client.listTools()).tools.map((tool) => tool.name)).not.toContain('whoami');
  });

  it('answers a call that asks for progress like any other', async () => {
    const withProgress = await client.callTool({ name: 'calculator', arguments: { a: 2, b: 3 } }, undefined, { onprogress: () => undefined });
    expect(withProgress).toEqual({ content: [{ type: 'text', text: '5' }] });
  });

  it('stops a call the client cancels (notifications/cancelled) and sends it no answer; the session goes on', async () => {
    const registry = gateway.app.get(ToolRegistryService);
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    let stopped!: (reason: unknown) => void;
    const abortReason = new Promise((resolve) => (stopped = resolve));
    registry.register({
      name: 'test.cancellable',
      description: 'Runs until its caller gives up',
      inputSchema: { type: 'object' },
      source: 'module',
      handler: (_args, { signal }) =>
        new Promise(() => {
          signal.addEventListener('abort', () => stopped(signal.reason));
          started();
        }),
    });
    const errors: Error[] = [];
    client.onerror = (error) => errors.push(error);
    try {
      const controller = new AbortController();
      const call = client.callTool({ name: 'test.cancellable', arguments: {} }, undefined, { signal: controller.signal });
      await running;
      controller.abort('the user spoke over it');
      await expect(call).rejects.toThrow();
      await expect(abortReason).resolves.toBeDefined();
      expect(await client.callTool({ name: 'calculator', arguments: { a: 1, b: 1 } })).toEqual({ content: [{ type: 'text', text: '2' }] });
      expect(errors).toEqual([]);
    } finally {
      registry.unregister('test.cancellable');
    }
  });

  it('is refused with a wrong token', async () => {
    const refused = new Client({ name: 'sdk-e2e', version: '1.0.0' });
    await expect(refused.connect(transportTo(gateway, 'wrong-token'))).rejects.toThrow();
  });
});

/** MCP WebSocket connections `gateway` still holds. */
const openMcpConnections = (gateway: RunningGateway) => gateway.app.get(ConnectionRegistry).count('mcp');

describe('MCP sessions are released', () => {
  let gateway: RunningGateway;

  beforeAll(async () => {
    gateway = await startGateway({ MCP_WS_AUTH_TOKEN: TOKEN, MCP_WS_MAX_CONNECTIONS: 10 });
  });
  afterAll(() => gateway.close());

  it('and counted on /health meanwhile', async () => {
    const client = new Client({ name: 'sdk-e2e', version: '1.0.0' });
    const transport = TRANSPORTS[1][1](gateway, TOKEN) as StreamableHTTPClientTransport;
    await client.connect(transport);
    const health = (await (await fetch(gateway.http('/health'))).json()) as any;
    expect(health.info.mcp).toEqual({ status: 'up', websocket_connections: 0, http_sessions: 1 });
    await transport.terminateSession();
    await client.close();
  });

  it('when a plain WebSocket client closes', async () => {
    const client = new Client({ name: 'sdk-e2e', version: '1.0.0' });
    await client.connect(TRANSPORTS[0][1](gateway, TOKEN));
    expect(openMcpConnections(gateway)).toBe(1);
    await client.close();
    await until(() => openMcpConnections(gateway) === 0);
  });

  it('when a Streamable HTTP client ends its session with DELETE', async () => {
    const sessions = gateway.app.get(McpHttpSessions);
    const client = new Client({ name: 'sdk-e2e', version: '1.0.0' });
    const transport = TRANSPORTS[1][1](gateway, TOKEN) as StreamableHTTPClientTransport;
    await client.connect(transport);
    expect(sessions.size).toBe(1);
    const sessionId = transport.sessionId!;
    await transport.terminateSession();
    await until(() => sessions.size === 0);
    const after = await fetch(gateway.http('/mcp'), {
      method: 'POST',
      headers: {
        Authorization: `Bearer ${TOKEN}`,
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        'Mcp-Session-Id': sessionId,
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(after.status).toBe(404);
    expect(await after.json()).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32001, message: expect.stringMatching(/Session not found/) } });
    await client.close();
  });
});
