import { Client as ModernClient } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ElicitRequestSchema, LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { RunningGateway, startGateway } from '../support/gateway';
import { HttpUpstream } from '../support/http-upstream';
import { ModernWebSocketTransport } from '../support/modern-websocket-transport';
import { RELAY_TOOLS } from '../support/relay-tools';
import { serversFile, upstreamIn } from '../support/upstreams';

const GATEWAY_TOKEN = 'gateway-token-of-the-socket-relay-tests';
const UPSTREAM_TOKEN = 'upstream-token-of-the-socket-relay-tests';
/**
 * An upstream tool talks to its caller while it runs; over a WebSocket its plain `tools/call`
 * must not take the sessions' fast path (`DirectBinder`), which has no caller to give it, but
 * reach the SDK server that relays its questions and log messages, in either revision.
 */
describe("An upstream's questions and log messages over the MCP WebSocket, plain calls included", () => {
  let upstream: HttpUpstream;
  let gateway: RunningGateway;
  let servers: ReturnType<typeof serversFile>;
  const closing: { close(): Promise<void> }[] = [];

  beforeAll(async () => {
    upstream = await HttpUpstream.start(UPSTREAM_TOKEN, RELAY_TOOLS);
    servers = serversFile({ relay: { url: upstream.url(), headers: { Authorization: `Bearer ${UPSTREAM_TOKEN}` } } });
    gateway = await startGateway({ AUTH_TOKENS: GATEWAY_TOKEN, MCP_SERVERS_FILE: servers.path, MCP_WS_MAX_CONNECTIONS: '4' });
    await upstreamIn(gateway, 'relay', 'connected');
  }, 60_000);

  afterAll(async () => {
    await Promise.all(closing.map((client) => client.close()));
    await gateway?.close();
    await upstream?.kill();
    servers?.remove();
  });

  it('relays elicitation and log messages to a 2025 client calling with plain params', async () => {
    const client = new Client({ name: 'socket-relay-2025', version: '1.0.0' }, { capabilities: { elicitation: {} } });
    client.setRequestHandler(ElicitRequestSchema, (request) => ({ action: 'accept', content: { name: `Ada (asked: ${request.params.message})` } }));
    const logged: unknown[] = [];
    client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => void logged.push(notification.params.data));
    await client.connect(new ModernWebSocketTransport(gateway.ws(`/mcp?token=${GATEWAY_TOKEN}`)) as unknown as Transport);
    closing.push(client);

    expect((await client.callTool({ name: 'relay.ask_name', arguments: {} })).content).toEqual([{ type: 'text', text: 'Hello Ada (asked: Your name?)' }]);
    await client.setLoggingLevel('warning');
    expect((await client.callTool({ name: 'relay.chatty', arguments: {} })).content).toEqual([{ type: 'text', text: 'logged' }]);
    expect(logged).toEqual([{ problem: 'a failure' }]);
  });

  it('asks a 2026-07-28 client through input_required, after plain calls of its own tools took the fast path', async () => {
    const client = new ModernClient(
      { name: 'socket-relay-2026', version: '1.0.0' },
      { capabilities: { elicitation: {} }, versionNegotiation: { mode: { pin: '2026-07-28' } } },
    );
    client.setRequestHandler('elicitation/create', (request) => ({ action: 'accept', content: { name: `Grace (asked: ${request.params.message})` } }));
    await client.connect(new ModernWebSocketTransport(gateway.ws(`/mcp?token=${GATEWAY_TOKEN}`)));
    closing.push(client);

    const first = await client.callTool({ name: 'calculator', arguments: { a: 2, b: 3 } });
    const second = await client.callTool({ name: 'calculator', arguments: { a: 2, b: 3 } });
    expect(second).toEqual(first);
    expect((await client.callTool({ name: 'relay.ask_name', arguments: {} })).content).toEqual([{ type: 'text', text: 'Hello Grace (asked: Your name?)' }]);
  });
});
