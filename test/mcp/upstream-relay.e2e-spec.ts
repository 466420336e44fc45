import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CallToolResultSchema,
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ElicitResultSchema,
  LoggingMessageNotification,
  LoggingMessageNotificationSchema,
  Progress,
  RELATED_TASK_META_KEY,
  ResourceUpdatedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { CreateTaskResultSchema } from '@modelcontextprotocol/sdk/experimental/tasks/types.js';
import { RunningGateway, startGateway } from '../support/gateway';
import { HttpUpstream, text, UpstreamTool } from '../support/http-upstream';
import { RELAY_TOOLS } from '../support/relay-tools';
import { EVERYTHING_SERVER, serversFile, until, upstreamIn } from '../support/upstreams';

const GATEWAY_TOKEN = 'gateway-token-of-the-relay-tests';
const UPSTREAM_TOKEN = 'upstream-token-of-the-relay-tests';

/** A long tool (its calls may run as tasks) that logs, then asks its client's name and tells what came of it. */
const LONG_CHATTY: UpstreamTool = {
  tool: { name: 'long_chatty', description: 'Logs, then asks', inputSchema: { type: 'object', properties: {} }, execution: { taskSupport: 'optional' } },
  run: async (_args, _meta, extra) => {
    // Time for the client's GET stream, which a task's messages take and which opens on the client's own time, to be there.
    await new Promise((resolve) => setTimeout(resolve, 200));
    await extra!.sendNotification({ method: 'notifications/message', params: { level: 'info', logger: 'long_chatty', data: 'started' } });
    const asked = await extra!
      .sendRequest({ method: 'elicitation/create', params: { message: 'Your name?', requestedSchema: { type: 'object', properties: {} } } }, ElicitResultSchema)
      .then(
        () => 'answered',
        (error: Error) => error.message,
      );
    return text(`asked: ${asked}`);
  },
};

/**
 * What an upstream sends the caller of a tool call while it runs, through the gateway's `/mcp`:
 * progress, log messages (at the caller's level), elicitation and sampling requests, each to the
 * client that made the call; and resource update notifications to the sessions subscribed.
 */
describe('Upstream progress, logs, elicitation, sampling and subscriptions through /mcp', () => {
  let upstream: HttpUpstream;
  let gateway: RunningGateway;
  let servers: ReturnType<typeof serversFile>;
  const clients: Client[] = [];

  /** A client of the gateway; `answering` declares elicitation and sampling and answers them. */
  async function client(answering: boolean): Promise<Client> {
    const mcp = new Client({ name: 'relay-e2e', version: '1.0.0' }, { capabilities: answering ? { elicitation: {}, sampling: {} } : {} });
    if (answering) {
      mcp.setRequestHandler(ElicitRequestSchema, (request) => ({ action: 'accept', content: { name: `Ada (asked: ${request.params.message})` } }));
      mcp.setRequestHandler(CreateMessageRequestSchema, () => ({ role: 'assistant', content: { type: 'text', text: 'short' }, model: 'test-model' }));
    }
    await mcp.connect(
      new StreamableHTTPClientTransport(new URL(gateway.http('/mcp')), { requestInit: { headers: { Authorization: `Bearer ${GATEWAY_TOKEN}` } } }),
    );
    clients.push(mcp);
    return mcp;
  }

  const textOf = (result: Awaited<ReturnType<Client['callTool']>>) => (result.content as { type: string; text?: string }[])[0]?.text;

  beforeAll(async () => {
    upstream = await HttpUpstream.start(UPSTREAM_TOKEN, [...RELAY_TOOLS, LONG_CHATTY]);
    servers = serversFile({
      relay: { url: upstream.url(), headers: { Authorization: `Bearer ${UPSTREAM_TOKEN}` } },
      everything: EVERYTHING_SERVER,
    });
    gateway = await startGateway({ AUTH_TOKENS: GATEWAY_TOKEN, MCP_SERVERS_FILE: servers.path });
    await upstreamIn(gateway, 'relay', 'connected');
    await upstreamIn(gateway, 'everything', 'connected');
  }, 60_000);

  afterAll(async () => {
    await Promise.all(clients.map((mcp) => mcp.close()));
    await gateway?.close();
    await upstream?.kill();
    servers?.remove();
  });

  it("relays the upstream's progress to the caller that asked for it", async () => {
    const mcp = await client(false);
    const updates: Progress[] = [];
    const result = await mcp.callTool({ name: 'relay.count', arguments: {} }, undefined, { onprogress: (progress) => updates.push(progress) });
    expect(textOf(result)).toBe('counted');
    expect(updates.map((update) => update.progress)).toEqual([1, 2, 3]);
    expect(updates[0].total).toBe(3);
  });

  it("relays the upstream's log messages during a call, at or above the level the caller set", async () => {
    const mcp = await client(false);
    const messages: LoggingMessageNotification['params'][] = [];
    mcp.setNotificationHandler(LoggingMessageNotificationSchema, ({ params }) => void messages.push(params));
    expect(textOf(await mcp.callTool({ name: 'relay.chatty', arguments: {} }))).toBe('logged');
    expect(messages.map((message) => message.level)).toEqual(['debug', 'error']);
    await mcp.setLoggingLevel('warning');
    messages.length = 0;
    await mcp.callTool({ name: 'relay.chatty', arguments: {} });
    expect(messages).toEqual([{ level: 'error', logger: 'chatty', data: { problem: 'a failure' } }]);
  });

  it("relays elicitation and sampling to the client that made the call, and the client's answer back", async () => {
    const asker = await client(true);
    const other = await client(true);
    let otherAsked = 0;
    other.setRequestHandler(ElicitRequestSchema, () => {
      otherAsked += 1;
      return { action: 'decline' };
    });
    expect(textOf(await asker.callTool({ name: 'relay.ask_name', arguments: {} }))).toBe('Hello Ada (asked: Your name?)');
    expect(textOf(await asker.callTool({ name: 'relay.summarize', arguments: {} }))).toBe('model said: short');
    expect(otherAsked).toBe(0);
  });

  it('keeps two concurrent callers apart over Streamable HTTP: each gets its own question', async () => {
    const first = await client(true);
    const second = await client(true);
    second.setRequestHandler(ElicitRequestSchema, () => ({ action: 'accept', content: { name: 'Grace' } }));
    const [a, b] = await Promise.all([first.callTool({ name: 'relay.ask_name', arguments: {} }), second.callTool({ name: 'relay.ask_name', arguments: {} })]);
    expect([textOf(a), textOf(b)]).toEqual(['Hello Ada (asked: Your name?)', 'Hello Grace']);
  });

  it("refuses an upstream's request to a caller that cannot answer it, with the reason, instead of hanging", async () => {
    const mcp = await client(false);
    const result = await mcp.callTool({ name: 'relay.ask_name', arguments: {} });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toContain('did not declare the elicitation capability');
    // The session is still usable.
    expect(textOf(await mcp.callTool({ name: 'relay.count', arguments: {} }))).toBe('counted');
  });

  it('relays a stdio upstream’s sampling request to the one caller in flight', async () => {
    const mcp = await client(true);
    const result = await mcp.callTool({ name: 'everything.trigger_sampling_request', arguments: { prompt: 'Say hi', maxTokens: 10 } });
    expect(result.isError).toBeFalsy();
    expect(JSON.stringify(result.content)).toContain('short');
  });

  it('calls a tool the upstream runs only as a task as one, its question relayed to the caller', async () => {
    const mcp = await client(true);
    mcp.setRequestHandler(ElicitRequestSchema, () => ({ action: 'accept', content: { interpretation: 'the physics one' } }));
    const listed = (await mcp.listTools()).tools.find((tool) => tool.name === 'everything.simulate_research_query');
    expect(listed?.execution).toEqual({ taskSupport: 'optional' });
    const result = await mcp.callTool({ name: 'everything.simulate_research_query', arguments: { topic: 'gravity', ambiguous: true } }, undefined, {
      timeout: 20_000,
    });
    expect(result.isError).toBeFalsy();
    expect(textOf(result)).toContain('Research Report: gravity');
    expect(textOf(result)).toContain('the physics one');
  }, 30_000);

  it("relays a 2025 task's log messages to its session, naming the task, and refuses its questions with the reason", async () => {
    const mcp = await client(true);
    const messages: LoggingMessageNotification['params'][] = [];
    mcp.setNotificationHandler(LoggingMessageNotificationSchema, ({ params }) => void messages.push(params));
    const { task } = await mcp.request(
      { method: 'tools/call', params: { name: 'relay.long_chatty', arguments: {}, task: { ttl: 60_000 } } },
      CreateTaskResultSchema,
    );
    await until(() => messages.length === 1, 5_000, "the task's log message");
    expect(messages[0]).toMatchObject({ level: 'info', data: 'started', _meta: { [RELATED_TASK_META_KEY]: { taskId: task.taskId } } });
    const result = await mcp.request({ method: 'tasks/result', params: { taskId: task.taskId } }, CallToolResultSchema);
    expect(textOf(result)).toBe('asked: MCP error -32600: elicitation/create from MCP server "relay" is not relayed: its caller cannot be asked');
  });

  it('relays resource updates to the sessions subscribed to the URI, and stops after unsubscribe', async () => {
    const mcp = await client(false);
    const uri = 'demo://resource/static/document/instructions.md';
    const updates: string[] = [];
    mcp.setNotificationHandler(ResourceUpdatedNotificationSchema, ({ params }) => void updates.push(params.uri));
    expect(mcp.getServerCapabilities()?.resources?.subscribe).toBe(true);
    await mcp.subscribeResource({ uri });
    // The reference server sends an update of each subscribed URI every 5 s once asked to.
    await mcp.callTool({ name: 'everything.toggle_subscriber_updates', arguments: {} });
    await until(() => updates.length > 0, 12_000, 'a resource update');
    expect(updates[0]).toBe(uri);
    await mcp.unsubscribeResource({ uri });
    await expect(mcp.subscribeResource({ uri: 'demo://not/there' })).rejects.toMatchObject({ code: -32002 });
  }, 30_000);
});
