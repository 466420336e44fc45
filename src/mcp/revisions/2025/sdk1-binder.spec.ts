import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { JSONRPCMessage, LATEST_PROTOCOL_VERSION, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { InvalidConfigurationError } from '../../../config/environment';
import { loadGatewayConfig } from '../../../config/gateway-config';
import { AccessTokenService } from '../../../core/auth/access-token.service';
import { RateLimitService } from '../../../core/limits/rate-limit.service';
import { ToolCallService } from '../../../core/tools/tool-call.service';
import { ToolCallScope } from '../../../core/tools/tool-call-scope';
import { McpTasks } from '../../methods/tasks/mcp-tasks.service';
import { ContextCatalogueService } from '../../../core/context/context-catalogue.service';
import { ToolRegistryService } from '../../../core/tools/tool-registry.service';
import { McpMethods } from '../../methods/mcp-methods';
import { Sdk1Binder } from './sdk1-binder';
import { GatewayState } from '../../../core/state/gateway-state';

function setUp(settings: Record<string, string> = {}) {
  const config = loadGatewayConfig({ MCP_SERVER_NAME: 'test-server', ...settings });
  const registry = new ToolRegistryService(config);
  registry.register({
    name: 'echo',
    description: 'Echoes its text',
    inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
    source: 'module',
    handler: ({ text }) => text,
  });
  const toolCalls = new ToolCallService(registry, new RateLimitService(config, new AccessTokenService(config), new GatewayState(config)));
  const context = new ContextCatalogueService();
  const tasks = new McpTasks(config, new GatewayState(config));
  return { registry, factory: new Sdk1Binder(config, new McpMethods(config, registry, toolCalls, context, tasks), context, tasks) };
}

/** A server on one end of an in-memory pair; the test speaks raw JSON-RPC on the other. */
async function rawSession(factory: Sdk1Binder) {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const received: JSONRPCMessage[] = [];
  clientSide.onmessage = (message) => received.push(message);
  const server = factory.createServer(ToolCallScope.ofConnection({ id: 'c1', protocol: 'mcp' }));
  await server.connect(serverSide);
  await clientSide.start();
  const request = async (id: number, method: string, params?: unknown) => {
    await clientSide.send({ jsonrpc: '2.0', id, method, ...(params === undefined ? {} : { params }) } as JSONRPCMessage);
    for (let waited = 0; waited < 2000; waited += 5) {
      const answer = received.find((message) => 'id' in message && message.id === id);
      if (answer) return answer as any;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    throw new Error(`No answer to ${method}`);
  };
  return { server, request };
}

const initialize = (protocolVersion: string) => ({ protocolVersion, capabilities: {}, clientInfo: { name: 'spec', version: '1' } });

describe('Sdk1Binder: the method table on an SDK 1.x server (the 2025 revisions)', () => {
  it('announces the configured server name and the gateway version', async () => {
    const { request } = await rawSession(setUp().factory);
    const { result } = await request(1, 'initialize', initialize('2025-06-18'));
    expect(result.serverInfo).toEqual({ name: 'test-server', version: expect.stringMatching(/^\d+\.\d+\.\d+/) });
    expect(result.capabilities).toEqual({ tools: { listChanged: true }, tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } });
  });

  it("answers the client's protocol version when the SDK supports it", async () => {
    const { request } = await rawSession(setUp().factory);
    expect((await request(1, 'initialize', initialize('2025-06-18'))).result.protocolVersion).toBe('2025-06-18');
  });

  it("answers MCP_PROTOCOL_VERSION, not the SDK's latest, to a version it does not support", async () => {
    const { request } = await rawSession(setUp({ MCP_PROTOCOL_VERSION: '2025-03-26' }).factory);
    expect((await request(1, 'initialize', initialize('2099-01-01'))).result.protocolVersion).toBe('2025-03-26');
  });

  it('refuses a protocol version the SDK cannot speak, naming MCP_PROTOCOL_VERSION', () => {
    expect(() => setUp({ MCP_PROTOCOL_VERSION: '2023-01-01' })).toThrow(InvalidConfigurationError);
    expect(() => setUp({ MCP_PROTOCOL_VERSION: '2023-01-01' })).toThrow(/MCP_PROTOCOL_VERSION must be one of .*2024-11-05/);
    expect(() => setUp({ MCP_PROTOCOL_VERSION: '2023-01-01', MCP_ENABLED: 'false' })).not.toThrow();
  });

  it('answers -32602 to a tools/call for an unknown tool or with malformed params, -32601 to an unknown method', async () => {
    const { request } = await rawSession(setUp().factory);
    await request(1, 'initialize', initialize(LATEST_PROTOCOL_VERSION));
    expect((await request(2, 'tools/call', { name: 'nope', arguments: {} })).error).toEqual({
      code: -32602,
      message: expect.stringMatching(/Unknown tool "nope"/),
    });
    expect((await request(3, 'tools/call', { arguments: {} })).error).toMatchObject({
      code: -32602,
      message: expect.stringMatching(/Invalid tools\/call request/),
    });
    expect((await request(4, 'tools/call', { name: 'echo', arguments: 'text' })).error).toMatchObject({ code: -32602 });
    expect((await request(5, 'resources/list')).error).toEqual({ code: -32601, message: 'Method not found' });
  });

  it('serves the catalogue to the SDK client and announces changes to the shared tools once initialized', async () => {
    const { registry, factory } = setUp();
    const server = factory.createServer(ToolCallScope.ofConnection({ id: 'c1', protocol: 'mcp' }));
    const client = new Client({ name: 'spec', version: '1' });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await Promise.all([server.connect(serverSide), client.connect(clientSide)]);

    expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(['echo']);
    expect(await client.callTool({ name: 'echo', arguments: { text: 'hi' } })).toEqual({ content: [{ type: 'text', text: 'hi' }] });
    expect(await client.callTool({ name: 'echo', arguments: {} })).toMatchObject({
      isError: true,
      content: [{ text: expect.stringMatching(/missing required argument "text"/) }],
    });

    let announced = 0;
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      announced += 1;
    });
    registry.register({ name: 'own', description: '', inputSchema: { type: 'object' }, source: 'client:other', handler: () => 1 }, 'other');
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(announced).toBe(0);
    registry.register({ name: 'late', description: '', inputSchema: { type: 'object' }, source: 'module', handler: () => 1 });
    for (let waited = 0; announced === 0 && waited < 2000; waited += 5) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(announced).toBe(1);
    expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(['echo', 'late']);

    await client.close();
    registry.unregister('late');
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(announced).toBe(1);
  });
});
