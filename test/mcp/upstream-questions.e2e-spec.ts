import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListRootsRequestSchema, ListRootsResultSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import {
  acceptedContent,
  CLIENT_CAPABILITIES_META_KEY,
  createMcpHandler,
  fromJsonSchema,
  inputRequired,
  inputResponse,
  McpServer,
  type CallToolResult as ModernCallToolResult,
  type InputRequests,
} from '@modelcontextprotocol/server';
import { randomUUID } from 'crypto';
import { createServer, IncomingMessage, Server as HttpServer, ServerResponse } from 'http';
import type { AddressInfo, Socket } from 'net';
import { Readable } from 'stream';
import type { ReadableStream as WebReadableStream } from 'stream/web';
import { RunningGateway, startGateway } from '../support/gateway';
import { modernEnvelope } from '../support/mcp-http';
import { serversFile, upstreamIn } from '../support/upstreams';

const TOKEN = 'token-of-the-upstream-questions-tests';
const NO_ARGUMENTS = fromJsonSchema<Record<string, never>>({ type: 'object', properties: {} });
const NAME_FORM = { type: 'object' as const, properties: { name: { type: 'string' as const } }, required: ['name'] };
const ROOTS = [{ uri: 'file:///home/ada/projects', name: 'projects' }];
const text = (value: string): ModernCallToolResult => ({ content: [{ type: 'text', text: value }] });

/**
 * A 2026-only upstream (SDK 2.x) whose tools ask in `input_required` answers, under keys of their
 * own: `ask_keyed` a name (`user_name`), `list_roots` the client's roots (`client_roots`),
 * `needs_sampling` a sampled message (`answer`).
 */
function keyedAskingServer(): McpServer {
  const server = new McpServer({ name: 'keyed-asking', version: '2.0.0' });
  server.registerTool('ask_keyed', { description: 'Asks a name under user_name', inputSchema: NO_ARGUMENTS }, (_args, ctx) => {
    const name = acceptedContent<{ name: string }>(ctx.mcpReq.inputResponses, 'user_name')?.name;
    if (name === undefined) return inputRequired({ inputRequests: { user_name: inputRequired.elicit({ message: 'Your name?', requestedSchema: NAME_FORM }) } });
    return text(`Hello ${name}`);
  });
  server.registerTool('list_roots', { description: 'Asks for the roots under client_roots', inputSchema: NO_ARGUMENTS }, (_args, ctx) => {
    const answer = inputResponse(ctx.mcpReq.inputResponses, 'client_roots');
    if (answer.kind !== 'roots') return inputRequired({ inputRequests: { client_roots: inputRequired.listRoots() } });
    return text(`Roots: ${answer.roots.map((root) => root.uri).join(', ')}`);
  });
  server.registerTool('needs_sampling', { description: 'Asks for a sampled message under answer', inputSchema: NO_ARGUMENTS }, (_args, ctx) => {
    if (inputResponse(ctx.mcpReq.inputResponses, 'answer').kind === 'sampling') return text('Sampled');
    return inputRequired({
      inputRequests: { answer: inputRequired.createMessage({ messages: [{ role: 'user', content: { type: 'text', text: 'Hi' } }], maxTokens: 5 }) },
    });
  });
  server.registerTool(
    'asks_what_it_can',
    { description: 'Asks a name and a sampled message, as far as the request declares it can', inputSchema: NO_ARGUMENTS },
    (_args, ctx) => {
      if (Object.keys(ctx.mcpReq.inputResponses ?? {}).length > 0) return text('Thanks');
      const declared = ((ctx.mcpReq.envelope as Record<string, unknown> | undefined)?.[CLIENT_CAPABILITIES_META_KEY] ?? {}) as Record<string, unknown>;
      const inputRequests: InputRequests = {};
      if (declared.elicitation) inputRequests.user_name = inputRequired.elicit({ message: 'Your name?', requestedSchema: NAME_FORM });
      if (declared.sampling)
        inputRequests.answer = inputRequired.createMessage({ messages: [{ role: 'user', content: { type: 'text', text: 'Hi' } }], maxTokens: 5 });
      return Object.keys(inputRequests).length > 0 ? inputRequired({ inputRequests }) : text('Nothing to ask');
    },
  );
  return server;
}

/** A node HTTP server on 127.0.0.1 that answers with `answer`, and closes its sockets when stopped. */
async function listen(answer: (request: IncomingMessage, response: ServerResponse) => Promise<void>): Promise<{ url: string; stop(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const http: HttpServer = createServer((request, response) => void answer(request, response));
  http.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`,
    stop: async () => {
      sockets.forEach((socket) => socket.destroy());
      await new Promise((resolve) => http.close(resolve));
    },
  };
}

async function startModernUpstream(): Promise<{ url: string; stop(): Promise<void> }> {
  const handler = createMcpHandler(() => keyedAskingServer(), { legacy: 'reject' });
  const served = await listen(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const headers = new Headers();
    for (const [name, value] of Object.entries(request.headers)) if (typeof value === 'string') headers.set(name, value);
    const answer = await handler.fetch(
      new Request(`http://127.0.0.1${request.url}`, { method: request.method, headers, body: chunks.length > 0 ? Buffer.concat(chunks) : undefined }),
    );
    response.writeHead(answer.status, Object.fromEntries(answer.headers));
    if (!answer.body) return void response.end();
    Readable.fromWeb(answer.body as WebReadableStream<Uint8Array>).pipe(response);
  });
  return { url: served.url, stop: async () => (await handler.close(), await served.stop()) };
}

/**
 * A 2025 upstream (SDK 1.x, stateful Streamable HTTP) that asks its client for roots while it
 * lists its tools, as servers that work in the client's folders do as soon as they are
 * connected, and in its tool `list_roots` (a request of its own during the call). What it was
 * answered while listing is kept in `rootsWhileListing`.
 */
async function startClassicUpstream(): Promise<{ url: string; rootsWhileListing: unknown[]; stop(): Promise<void> }> {
  const rootsWhileListing: unknown[] = [];
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const newServer = () => {
    const server = new Server({ name: 'classic-roots', version: '1.0.0' }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, async (_request, extra) => {
      rootsWhileListing.push(await extra.sendRequest({ method: 'roots/list' }, ListRootsResultSchema).catch((error: Error) => ({ error: error.message })));
      return { tools: [{ name: 'list_roots', description: "Names the client's roots", inputSchema: { type: 'object' as const, properties: {} } }] };
    });
    server.setRequestHandler(CallToolRequestSchema, async (_request, extra) => {
      const { roots } = await extra.sendRequest({ method: 'roots/list' }, ListRootsResultSchema);
      return { content: [{ type: 'text' as const, text: `Roots: ${roots.map((root) => root.uri).join(', ')}` }] };
    });
    return server;
  };
  const served = await listen(async (request, response) => {
    const sessionId = request.headers['mcp-session-id'];
    const known = typeof sessionId === 'string' ? transports.get(sessionId) : undefined;
    if (known) return known.handleRequest(request, response);
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: randomUUID,
      onsessioninitialized: (id) => void transports.set(id, transport),
    });
    await newServer().connect(transport);
    await transport.handleRequest(request, response);
  });
  return { url: served.url, rootsWhileListing, stop: served.stop };
}

/** One raw 2026 `tools/call` to the gateway, declaring `capabilities`: its HTTP status and its JSON-RPC answer. */
async function call2026(
  gateway: RunningGateway,
  name: string,
  capabilities: Record<string, unknown>,
  retry: Record<string, unknown> = {},
): Promise<{ status: number; answer: { result?: Record<string, any>; error?: { code: number; message: string; data?: any } } }> {
  const response = await fetch(gateway.http('/mcp'), {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      authorization: `Bearer ${TOKEN}`,
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'tools/call',
      'mcp-name': name,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: {}, ...retry, _meta: modernEnvelope(capabilities) } }),
  });
  const body = await response.text();
  const json = response.headers.get('content-type')?.includes('text/event-stream')
    ? body
        .split('\n')
        .find((line) => line.startsWith('data: ') && line.includes('"id":1'))!
        .slice('data: '.length)
    : body;
  return { status: response.status, answer: JSON.parse(json) };
}

/**
 * What upstreams ask a caller through the gateway, by the name they give it and for roots: a
 * 2026 client is asked under the upstream's own keys, a 2026 upstream is told only what the
 * client declared, and the client gets -32021 (HTTP 400) for a question it did not declare the
 * capability for; `roots/list` is relayed to 2026 clients as an
 * `input_required` question and to 2025 clients as a request of the gateway's, and answered with
 * no roots when there is nobody to ask (an upstream asking at connect time).
 */
describe("Upstreams' questions by their own keys, and roots", () => {
  let modern: Awaited<ReturnType<typeof startModernUpstream>>;
  let classic: Awaited<ReturnType<typeof startClassicUpstream>>;
  let gateway: RunningGateway;
  let servers: ReturnType<typeof serversFile>;
  const closing: { close(): Promise<void> }[] = [];

  beforeAll(async () => {
    [modern, classic] = await Promise.all([startModernUpstream(), startClassicUpstream()]);
    servers = serversFile({ modern: { url: modern.url }, classic: { url: classic.url } });
    gateway = await startGateway({ AUTH_TOKENS: TOKEN, MCP_SERVERS_FILE: servers.path });
    await upstreamIn(gateway, 'modern', 'connected');
    await upstreamIn(gateway, 'classic', 'connected');
  }, 60_000);

  afterAll(async () => {
    await Promise.all(closing.map((client) => client.close()));
    await gateway?.close();
    await Promise.all([modern?.stop(), classic?.stop()]);
    servers?.remove();
  });

  const textOf = (result: { content?: unknown }) => (result.content as { text?: string }[])[0]?.text;

  it("asks a 2026 client under the upstream's own key, and takes the answer given under it to the upstream", async () => {
    const first = await call2026(gateway, 'modern.ask_keyed', { elicitation: {} });
    expect(first.answer.result).toMatchObject({
      resultType: 'input_required',
      inputRequests: { user_name: { method: 'elicitation/create', params: { message: 'Your name?' } } },
    });
    const answered = await call2026(
      gateway,
      'modern.ask_keyed',
      { elicitation: {} },
      { requestState: first.answer.result!.requestState, inputResponses: { user_name: { action: 'accept', content: { name: 'Grace' } } } },
    );
    expect(answered.answer.result).toMatchObject({ content: [{ type: 'text', text: 'Hello Grace' }] });
  });

  it('hands a 2026 upstream the answers a client sent unasked with its first request, extra keys and all', async () => {
    const answered = await call2026(
      gateway,
      'modern.ask_keyed',
      { elicitation: {} },
      { inputResponses: { user_name: { action: 'accept', content: { name: 'Hedy' } }, unknown_extra_key: { action: 'accept', content: { foo: 'bar' } } } },
    );
    expect(answered.answer.result).toMatchObject({ content: [{ type: 'text', text: 'Hello Hedy' }] });
  });

  it("lets the SDK 2.x client answer by the upstream's keys by itself, roots included", async () => {
    const client = new ModernClient(
      { name: 'upstream-questions-e2e', version: '1.0.0' },
      { capabilities: { elicitation: {}, roots: {} }, versionNegotiation: { mode: { pin: '2026-07-28' } } },
    );
    const keys: unknown[] = [];
    client.setRequestHandler('elicitation/create', (_request, ctx) => {
      keys.push(ctx.mcpReq.id);
      return { action: 'accept', content: { name: 'Ada' } };
    });
    client.setRequestHandler('roots/list', (_request, ctx) => {
      keys.push(ctx.mcpReq.id);
      return { roots: ROOTS };
    });
    await client.connect(new ModernTransport(new URL(gateway.http('/mcp')), { requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } } }));
    closing.push(client);
    expect(textOf(await client.callTool({ name: 'modern.ask_keyed', arguments: {} }))).toBe('Hello Ada');
    expect(textOf(await client.callTool({ name: 'modern.list_roots', arguments: {} }))).toBe(`Roots: ${ROOTS[0].uri}`);
    // A 2025 upstream names no key: the gateway's own.
    expect(textOf(await client.callTool({ name: 'classic.list_roots', arguments: {} }))).toBe(`Roots: ${ROOTS[0].uri}`);
    expect(keys).toEqual(['user_name', 'client_roots', 'roots-1']);
  });

  it('tells a 2026 upstream only the capabilities the client declared, so it asks nothing else', async () => {
    const asked = await call2026(gateway, 'modern.asks_what_it_can', { sampling: {} });
    expect(Object.keys(asked.answer.result?.inputRequests ?? {})).toEqual(['answer']);
    const nothing = await call2026(gateway, 'modern.asks_what_it_can', {});
    expect(nothing.answer.result).toMatchObject({ content: [{ type: 'text', text: 'Nothing to ask' }] });
  });

  it('ends the call of a 2026 client that did not declare what the upstream asks for with -32021 and HTTP 400, roots and sampling alike', async () => {
    const roots = await call2026(gateway, 'modern.list_roots', { elicitation: {} });
    expect(roots.status).toBe(400);
    // The 2026 upstream is told what the client declared, and refuses by itself.
    expect(roots.answer.error).toMatchObject({ code: -32021, message: expect.stringContaining('(roots/list)'), data: { requiredCapabilities: { roots: {} } } });
    const sampling = await call2026(gateway, 'modern.needs_sampling', {});
    expect(sampling.status).toBe(400);
    expect(sampling.answer.error).toMatchObject({ code: -32021, data: { requiredCapabilities: { sampling: {} } } });
    // A 2025 upstream asks whatever the client declared: the gateway refuses its question, and ends the call so.
    const classicRoots = await call2026(gateway, 'classic.list_roots', {});
    expect(classicRoots.status).toBe(400);
    expect(classicRoots.answer.error).toMatchObject({
      code: -32021,
      message: 'The client that made this call cannot answer roots/list: it did not declare the roots capability',
      data: { requiredCapabilities: { roots: {} } },
    });
  });

  /** A 2025 client (SDK 1.x) of the gateway, declaring roots or not; `asked` counts the roots/list requests it answered. */
  async function client2025(declaresRoots: boolean): Promise<{ client: Client; asked: () => number }> {
    const client = new Client({ name: 'upstream-questions-2025', version: '1.0.0' }, { capabilities: declaresRoots ? { roots: {} } : {} });
    let asked = 0;
    if (declaresRoots)
      client.setRequestHandler(ListRootsRequestSchema, () => {
        asked++;
        return { roots: ROOTS };
      });
    await client.connect(new StreamableHTTPClientTransport(new URL(gateway.http('/mcp')), { requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } } }));
    closing.push(client);
    return { client, asked: () => asked };
  }

  it("relays roots/list to a 2025 client that declared roots, from a 2025 upstream's request and a 2026 upstream's input_required alike", async () => {
    const { client, asked } = await client2025(true);
    expect(textOf((await client.callTool({ name: 'classic.list_roots', arguments: {} })) as { content?: unknown })).toBe(`Roots: ${ROOTS[0].uri}`);
    expect(textOf((await client.callTool({ name: 'modern.list_roots', arguments: {} })) as { content?: unknown })).toBe(`Roots: ${ROOTS[0].uri}`);
    expect(asked()).toBe(2);
  });

  it('tells the upstream of a 2025 client that did not declare roots that there are none, rather than failing its call', async () => {
    const { client } = await client2025(false);
    const result = (await client.callTool({ name: 'classic.list_roots', arguments: {} })) as { content?: unknown; isError?: boolean };
    expect(result.isError).toBeFalsy();
    expect(textOf(result)).toBe('Roots: ');
  });

  it('answers an upstream that asks for roots while the gateway lists its tools, with no caller to ask, with none', () => {
    expect(classic.rootsWhileListing.length).toBeGreaterThan(0);
    expect(classic.rootsWhileListing[0]).toEqual({ roots: [] });
  });
});
