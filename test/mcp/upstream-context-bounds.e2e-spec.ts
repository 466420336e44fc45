import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateMessageRequestSchema, JSONRPCMessage, LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { RunningGateway, startGateway } from '../support/gateway';
import { FLOOD_MESSAGES, HostileContextUpstream } from '../support/hostile-context-upstream';
import { serversFile, until, upstreamIn } from '../support/upstreams';

const TOKEN = 'token-of-the-context-bounds-tests';

/**
 * An upstream that answers a resource read with 100 MB, floods its caller with log messages and
 * list changes, and asks a question nobody answers: each bounded, the caller told why, and the
 * gateway, the upstream's connection and other clients unaffected.
 */
describe('Upstream resources, notifications and requests, within bounds', () => {
  let upstream: HostileContextUpstream;
  let gateway: RunningGateway;
  let servers: ReturnType<typeof serversFile>;
  const clients: Client[] = [];

  async function client(): Promise<Client> {
    const mcp = new Client({ name: 'bounds-e2e', version: '1.0.0' });
    await mcp.connect(new StreamableHTTPClientTransport(new URL(gateway.http('/mcp')), { requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } } }));
    clients.push(mcp);
    return mcp;
  }

  beforeAll(async () => {
    upstream = await HostileContextUpstream.start(100 * 1024 * 1024);
    // One upstream under two names: `impatient` gives a call 1 s, `hostile` the default.
    servers = serversFile({ hostile: { url: upstream.url, callTimeout: 30 }, impatient: { url: upstream.url, callTimeout: 1 } });
    gateway = await startGateway({ AUTH_TOKENS: TOKEN, MCP_SERVERS_FILE: servers.path });
    await upstreamIn(gateway, 'hostile', 'connected');
    await upstreamIn(gateway, 'impatient', 'connected');
  }, 60_000);

  afterAll(async () => {
    await Promise.all(clients.map((mcp) => mcp.close()));
    await gateway?.close();
    await upstream?.close();
    servers?.remove();
  });

  it('refuses a 100 MB resource read by its bound, naming the setting, and reads on', async () => {
    const mcp = await client();
    await expect(mcp.readResource({ uri: 'huge://file' })).rejects.toMatchObject({
      code: -32603,
      message: expect.stringContaining('MCP_UPSTREAM_MAX_RESULT_BYTES'),
    });
    // (That the gateway drops such an answer as it comes, holding none of it, is measured with an
    // upstream in a process of its own: test/probing/probing-upstream-results.e2e-spec.ts.)
    expect((await upstreamIn(gateway, 'hostile', 'connected')).resources).toBe(1);
    // Both names list the URI; the first in the file owns it.
    expect((await mcp.listResources()).resources.map((resource) => resource.uri)).toEqual(['huge://file']);
  }, 30_000);

  it('relays a flood of log messages to its caller, in order, while other clients are served', async () => {
    const flooded = await client();
    const other = await client();
    let received = 0;
    let inOrder = true;
    flooded.setNotificationHandler(LoggingMessageNotificationSchema, ({ params }) => {
      inOrder &&= params.data === `message ${received}`;
      received += 1;
    });
    const [result, calm] = await Promise.all([
      flooded.callTool({ name: 'hostile.flood', arguments: {} }),
      other.callTool({ name: 'calculator', arguments: { a: 1, b: 1 } }),
    ]);
    expect(result.content).toEqual([{ type: 'text', text: 'flooded' }]);
    expect(calm.isError).toBeFalsy();
    expect(received).toBe(FLOOD_MESSAGES);
    expect(inOrder).toBe(true);
    expect((await upstreamIn(gateway, 'hostile', 'connected')).failures).toBe(0);
  }, 60_000);

  it("ends a call whose question its caller never answers at the call's time limit, and withdraws the question everywhere", async () => {
    const mcp = new Client({ name: 'bounds-e2e', version: '1.0.0' }, { capabilities: { sampling: {} } });
    const transport = new StreamableHTTPClientTransport(new URL(gateway.http('/mcp')), { requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } } });
    await mcp.connect(transport);
    clients.push(mcp);
    // What reaches the client, in order. (The SDK 1.x client does not stop its handler when the
    // cancelled request's id is 0, as this first one is, so the messages themselves are checked.)
    const received: JSONRPCMessage[] = [];
    const deliver = transport.onmessage!;
    transport.onmessage = (message: JSONRPCMessage) => {
      received.push(message);
      deliver(message);
    };
    mcp.setRequestHandler(CreateMessageRequestSchema, () => new Promise(() => undefined));
    const started = Date.now();
    const result = await mcp.callTool({ name: 'impatient.ask_forever', arguments: {} });
    expect(result.isError).toBe(true);
    expect(JSON.stringify(result.content)).toContain('did not finish within 1 s');
    expect(Date.now() - started).toBeLessThan(5_000);
    const question = received.find((message) => 'method' in message && message.method === 'sampling/createMessage') as { id: number };
    const withdrawn = received.findIndex(
      (message) => 'method' in message && message.method === 'notifications/cancelled' && message.params?.requestId === question.id,
    );
    const answered = received.findIndex((message) => 'result' in message && JSON.stringify(message.result).includes('did not finish'));
    expect(withdrawn).toBeGreaterThan(-1);
    expect(withdrawn).toBeLessThan(answered);
    await until(() => upstream.unansweredQuestions.length === 1, 5_000, 'the question to be withdrawn at the upstream');
    // The gateway sends the call's cancellation first, then the answer that withdraws the
    // question; they go as two requests, and either may arrive first.
    expect(upstream.unansweredQuestions[0]).toMatch(/^cancelled$|sampling\/createMessage was withdrawn: the tool call it came with has ended/);
    // The session is still usable.
    expect((await mcp.callTool({ name: 'calculator', arguments: { a: 2, b: 2 } })).isError).toBeFalsy();
  }, 30_000);
});
