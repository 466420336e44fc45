import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { WebSocketClientTransport } from '@modelcontextprotocol/sdk/client/websocket.js';
import { randomBytes } from 'crypto';
import { TracingService } from '../../src/core/tracing/tracing.service';
import { HttpUpstream } from '../support/http-upstream';
import { startLlmStack } from '../support/llm-stack';
import { listeningPort, MainProcess, startMain } from '../support/main-process';
import { OtlpReceiver, ReceivedSpan } from '../support/otlp-receiver';
import { ScriptedLlm } from '../support/scripted-llm';
import { provideGlobalWebSocket } from '../support/sdk-websocket';
import { serversFile, until } from '../support/upstreams';
import { TestSocket } from '../support/test-socket';

provideGlobalWebSocket();

/*
 * The traced gateway runs as `node dist/main.js` (as users run it): the OTLP exporter loads
 * Node's http module with a dynamic import(), which Jest's module sandbox cannot run. Its spans
 * are read once it has stopped on SIGTERM, which is also what shows they are flushed on shutdown.
 */

const MCP_TOKEN = 'trace-mcp-token';
const UPSTREAM_TOKEN = 'trace-upstream-token';
const SPAN_SERVER = 2;
const SPAN_CLIENT = 3;
const STATUS_ERROR = 2;
const MODEL = 'traced-model';

/** A client's own span: a fresh trace id and span id, as a `traceparent` value. */
function clientSpan(): { traceId: string; spanId: string; traceparent: string } {
  const traceId = randomBytes(16).toString('hex');
  const spanId = randomBytes(8).toString('hex');
  return { traceId, spanId, traceparent: `00-${traceId}-${spanId}-01` };
}

const inTrace = (traceId: string) => (span: ReceivedSpan) => span.traceId === traceId;
const withTurnId = (turnId: string) => (span: ReceivedSpan) => span.attributes['gateway.turn.id'] === turnId;

/** A gateway in its own process, with a scripted model; `stop()` ends it with SIGTERM. */
interface TracedGateway {
  main: MainProcess;
  port: number;
  llm: ScriptedLlm;
  stop(): Promise<number | null>;
}

async function startTraced(env: Record<string, string>): Promise<TracedGateway> {
  const llm = await ScriptedLlm.start();
  const main = startMain({ LLM_BASE_URL: llm.baseUrl, LLM_MAX_RETRIES: '0', LLM_TIMEOUT: '5', LLM_MODEL: MODEL, REDIS_URL: '', AUTH_TOKENS: '', ...env });
  const port = await listeningPort(main.output);
  return {
    main,
    port,
    llm,
    stop: async () => {
      main.child.kill('SIGTERM');
      const code = await main.exited;
      await llm.close();
      return code;
    },
  };
}

/** Runs one LLM-gateway turn on a fresh connection (with `headers` on its upgrade); its frames. */
async function turn(port: number, text: string, turnId: string, headers: Record<string, string> = {}): Promise<any[]> {
  const socket = await TestSocket.open(`ws://127.0.0.1:${port}/`, { headers });
  expect(await socket.next()).toMatchObject({ type: 'status', status: 'connected' });
  socket.send({ type: 'text_input', text, turn_id: turnId });
  const frames: any[] = [];
  for (;;) {
    const frame = await socket.next(8000);
    frames.push(frame);
    if (frame.type === 'status' && frame.status === 'idle') break;
  }
  await socket.close();
  return frames;
}

describe('OpenTelemetry traces, received by an OTLP/HTTP (JSON) endpoint', () => {
  let receiver: OtlpReceiver;
  let home: HttpUpstream;
  let file: { path: string; remove(): void };
  let gateway: TracedGateway;
  /** The `_meta` of every call the upstream received. */
  const upstreamMeta: (Record<string, unknown> | undefined)[] = [];
  const clients = {
    turn: clientSpan(),
    mcpHttp: clientSpan(),
    mcpMeta: clientSpan(),
    mcpRead: clientSpan(),
    liteHttp: clientSpan(),
    liteWs: clientSpan(),
    utcp: clientSpan(),
    utcpHttp: clientSpan(),
  };
  let exitCode: number | null;

  const url = (path: string, scheme = 'http') => `${scheme}://127.0.0.1:${gateway.port}${path}`;

  beforeAll(async () => {
    receiver = await OtlpReceiver.start();
    home = await HttpUpstream.start(UPSTREAM_TOKEN, [
      {
        tool: { name: 'set-light', description: 'Turns a light on or off', inputSchema: { type: 'object', properties: { room: { type: 'string' } } } },
        run: ({ room }, meta) => {
          upstreamMeta.push(meta);
          return { content: [{ type: 'text', text: `The ${room} light is on` }] };
        },
      },
    ]);
    home.resources.set('home://lights/kitchen', 'on');
    file = serversFile({ home: { url: home.url(), headers: { Authorization: `Bearer ${UPSTREAM_TOKEN}` } } });
    gateway = await startTraced({
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_SERVICE_NAME: 'gateway-under-test',
      MCP_SERVERS_FILE: file.path,
      MCP_WS_AUTH_TOKEN: MCP_TOKEN,
      MCP_WS_MAX_CONNECTIONS: '10',
    });
    await until(
      async () => {
        const health: any = await (await fetch(url('/health'))).json();
        return health.details.mcp_upstreams?.servers.home?.state === 'connected';
      },
      20_000,
      'the upstream to connect',
    );

    // An LLM turn whose client sent a traceparent on the upgrade: two model calls, three tool calls (one upstream, one failing).
    gateway.llm.reply(
      {
        toolCalls: [
          { id: 'c1', name: 'calculator', arguments: { a: 2, b: 3, operation: 'multiply' } },
          { id: 'c2', name: 'home.set_light', arguments: { room: 'kitchen' } },
          { id: 'c3', name: 'calculator', arguments: { a: 1, b: 0, operation: 'divide' } },
        ],
      },
      { text: 'Six, and the kitchen light is on.' },
      { text: 'Hello.' },
      { fault: 'http500' },
    );
    await turn(gateway.port, 'two times three, and light the kitchen', 'turn-traced', { traceparent: clients.turn.traceparent });
    await turn(gateway.port, 'hi', 'turn-untraced');
    await turn(gateway.port, 'hi', 'turn-failed');

    // MCP over Streamable HTTP, the traceparent in a header; over WebSocket, in params._meta (and one malformed).
    const overHttp = new Client({ name: 'trace-e2e', version: '1.0.0' });
    await overHttp.connect(
      new StreamableHTTPClientTransport(new URL(url('/mcp')), {
        requestInit: { headers: { Authorization: `Bearer ${MCP_TOKEN}`, traceparent: clients.mcpHttp.traceparent } },
      }),
    );
    await overHttp.callTool({ name: 'home.set_light', arguments: { room: 'hall' } });
    await overHttp.close();
    const reader = new Client({ name: 'trace-e2e', version: '1.0.0' });
    await reader.connect(
      new StreamableHTTPClientTransport(new URL(url('/mcp')), {
        requestInit: { headers: { Authorization: `Bearer ${MCP_TOKEN}`, traceparent: clients.mcpRead.traceparent } },
      }),
    );
    expect((await reader.readResource({ uri: 'home://lights/kitchen' })).contents).toEqual([{ uri: 'home://lights/kitchen', text: 'on' }]);
    await reader.close();
    const overWs = new Client({ name: 'trace-e2e', version: '1.0.0' });
    await overWs.connect(new WebSocketClientTransport(new URL(url(`/mcp?token=${MCP_TOKEN}`, 'ws'))));
    expect((await overWs.callTool({ name: 'calculator', arguments: { a: 4, b: 5 }, _meta: { traceparent: clients.mcpMeta.traceparent } })).content).toEqual([
      { type: 'text', text: '9' },
    ]);
    expect((await overWs.callTool({ name: 'calculator', arguments: { a: 40, b: 2 }, _meta: { traceparent: '00-not-a-trace-01' } })).content).toEqual([
      { type: 'text', text: '42' },
    ]);
    await overWs.close();

    // LiteMCP over HTTP and WebSocket, UTCP over WebSocket: the traceparent header of the request or the upgrade.
    const response = await fetch(url('/litemcp/calculator'), {
      method: 'POST',
      headers: { 'content-type': 'application/json', traceparent: clients.liteHttp.traceparent },
      body: JSON.stringify({ tool: 'calculator', arguments: ['2', '3'] }),
    });
    expect(response.status).toBe(200);
    const lite = await TestSocket.open(url('/litemcp/calculator', 'ws'), { headers: { traceparent: clients.liteWs.traceparent } });
    lite.send({ version: [1, 0, 0], id: 1, type: 'call', data: { version: [1, 0, 0], tool: 'calculator', arguments: ['1', '1'] } });
    expect(await lite.next()).toMatchObject({ type: 'result', data: { response: { error: false } } });
    await lite.close();
    const utcp = await TestSocket.open(url('/utcp', 'ws'), { headers: { traceparent: clients.utcp.traceparent } });
    utcp.send({ type: 'call', id: 'u1', tool: 'calculator', params: { a: 6, b: 7 } });
    expect(await utcp.next()).toMatchObject({ id: 'u1', result: 13 });
    await utcp.close();
    const utcpHttp = await fetch(url('/utcp/calculator'), {
      method: 'POST',
      headers: { 'content-type': 'application/json', traceparent: clients.utcpHttp.traceparent },
      body: JSON.stringify({ a: 2, b: 2 }),
    });
    expect(await utcpHttp.json()).toBe(4);

    exitCode = await gateway.stop();
  }, 60_000);

  afterAll(async () => {
    if (gateway && gateway.main.child.exitCode === null) await gateway.stop();
    await home?.kill();
    await receiver?.close();
    file?.remove();
  });

  it('flushes every span on shutdown, as JSON to <endpoint>/v1/traces', () => {
    expect(exitCode).toBe(0);
    expect(receiver.exports.length).toBeGreaterThan(0);
    expect(new Set(receiver.exports.map((received) => `${received.path} ${received.contentType}`))).toEqual(new Set(['/v1/traces application/json']));
    expect(receiver.spans.every((span) => span.resource['service.name'] === 'gateway-under-test')).toBe(true);
  });

  it('traces a turn: client span (upgrade traceparent) -> turn -> its model calls and tool calls', () => {
    const turnSpan = receiver.span('llm.turn', inTrace(clients.turn.traceId));
    expect(turnSpan).toMatchObject({ parentSpanId: clients.turn.spanId, kind: SPAN_SERVER });
    expect(turnSpan.attributes).toMatchObject({ 'gateway.protocol': 'llm', 'gateway.turn.id': 'turn-traced', 'gateway.outcome': 'ok' });
    const children = receiver.spans.filter((span) => span.parentSpanId === turnSpan.spanId);
    expect(children.map((span) => span.name).sort()).toEqual([
      `chat ${MODEL}`,
      `chat ${MODEL}`,
      'execute_tool calculator',
      'execute_tool calculator',
      'execute_tool home.set_light',
    ]);
    expect(children.every((span) => span.traceId === clients.turn.traceId)).toBe(true);
    const models = children.filter((span) => span.name.startsWith('chat '));
    expect(models.map((span) => [span.kind, span.attributes['gen_ai.request.model'], span.attributes['gateway.llm.tool_calls']]).sort()).toEqual([
      [SPAN_CLIENT, MODEL, 0],
      [SPAN_CLIENT, MODEL, 3],
    ]);
    const failed = children.find((span) => span.name === 'execute_tool calculator' && span.status.code === STATUS_ERROR)!;
    expect(failed.attributes).toMatchObject({ 'error.type': 'TOOL_EXECUTION_FAILED', 'gateway.turn.id': 'turn-traced', 'gateway.protocol': 'llm' });
    expect(failed.status.message).toBe('Division by zero');
  });

  it("carries an upstream tool call's own span on to the upstream in params._meta", () => {
    const call = receiver.span('execute_tool home.set_light', inTrace(clients.turn.traceId));
    expect(call.attributes).toMatchObject({ 'gateway.tool.source': 'mcp:home' });
    expect(upstreamMeta[0]).toMatchObject({ traceparent: `00-${clients.turn.traceId}-${call.spanId}-01` });
  });

  it('starts a trace of its own for a turn without a client traceparent', () => {
    const turnSpan = receiver.span('llm.turn', withTurnId('turn-untraced'));
    expect(turnSpan.parentSpanId).toBeUndefined();
    expect(receiver.spans.filter((span) => span.parentSpanId === turnSpan.spanId).map((span) => span.name)).toEqual([`chat ${MODEL}`]);
  });

  it('ends a failed model call and its turn as errors', () => {
    const turnSpan = receiver.span('llm.turn', withTurnId('turn-failed'));
    expect(turnSpan.attributes).toMatchObject({ 'gateway.outcome': 'LLM_ERROR', 'error.type': 'LLM_ERROR' });
    expect(turnSpan.status.code).toBe(STATUS_ERROR);
    const model = receiver.span(`chat ${MODEL}`, (span) => span.parentSpanId === turnSpan.spanId);
    expect(model.status).toMatchObject({ code: STATUS_ERROR, message: 'The model server answered HTTP 500' });
  });

  it('makes an MCP tools/call over Streamable HTTP a child of the traceparent header, and passes it upstream', () => {
    const span = receiver.span('execute_tool home.set_light', inTrace(clients.mcpHttp.traceId));
    expect(span.parentSpanId).toBe(clients.mcpHttp.spanId);
    expect(span.attributes).toMatchObject({ 'gateway.protocol': 'mcp', 'gateway.tool.source': 'mcp:home' });
    expect(upstreamMeta[1]).toMatchObject({ traceparent: `00-${clients.mcpHttp.traceId}-${span.spanId}-01` });
  });

  it("makes an upstream's resource read a span of its own, child of the client's, and passes it upstream", () => {
    const span = receiver.span('mcp.resource home://lights/kitchen', inTrace(clients.mcpRead.traceId));
    expect(span.parentSpanId).toBe(clients.mcpRead.spanId);
    expect(span.attributes).toMatchObject({ 'gateway.protocol': 'mcp', 'gateway.mcp.request': 'resource', 'gateway.outcome': 'ok' });
    expect(home.readMeta.at(-1)).toMatchObject({ traceparent: `00-${clients.mcpRead.traceId}-${span.spanId}-01` });
  });

  it('makes an MCP tools/call over WebSocket a child of params._meta.traceparent, and ignores a malformed one', () => {
    const span = receiver.span('execute_tool calculator', inTrace(clients.mcpMeta.traceId));
    expect(span).toMatchObject({ parentSpanId: clients.mcpMeta.spanId, attributes: expect.objectContaining({ 'gateway.protocol': 'mcp' }) });
    const roots = receiver.spans.filter((s) => s.name === 'execute_tool calculator' && s.parentSpanId === undefined);
    expect(roots).toHaveLength(1);
    expect(roots[0].attributes).toMatchObject({ 'gateway.protocol': 'mcp' });
  });

  it.each([
    ['LiteMCP over HTTP', 'liteHttp', 'litemcp'],
    ['LiteMCP over WebSocket', 'liteWs', 'litemcp'],
    ['UTCP over WebSocket', 'utcp', 'utcp'],
    ['UTCP over HTTP', 'utcpHttp', 'utcp'],
  ] as const)('makes a %s call a child of the traceparent header', (_name, client, protocol) => {
    const span = receiver.span('execute_tool calculator', inTrace(clients[client].traceId));
    expect(span.parentSpanId).toBe(clients[client].spanId);
    expect(span.attributes).toMatchObject({ 'gateway.protocol': protocol });
  });
});

describe('OpenTelemetry traces over http/protobuf', () => {
  it('posts protobuf to <endpoint>/v1/traces (the standard default), a trailing slash on the endpoint or not', async () => {
    const receiver = await OtlpReceiver.start();
    const gateway = await startTraced({ OTEL_EXPORTER_OTLP_ENDPOINT: `${receiver.endpoint}/`, OTEL_SERVICE_NAME: 'proto-gateway' });
    try {
      gateway.llm.reply({ toolCalls: [{ id: 'c1', name: 'calculator', arguments: { a: 1, b: 2 } }] }, { text: 'Three.' });
      await turn(gateway.port, 'one plus two', 'turn-proto');
    } finally {
      expect(await gateway.stop()).toBe(0);
      await receiver.close();
    }
    expect(receiver.exports.map((received) => [received.path, received.contentType])).toEqual([['/v1/traces', 'application/x-protobuf']]);
    const body = receiver.exports[0].body.toString('latin1');
    for (const text of ['proto-gateway', 'llm.turn', `chat ${MODEL}`, 'execute_tool calculator', 'turn-proto']) expect(body).toContain(text);
  });

  it('refuses a protocol it does not speak, naming the setting', async () => {
    const main = startMain({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' });
    expect(await main.exited).not.toBe(0);
    expect(main.output()).toContain('OTEL_EXPORTER_OTLP_PROTOCOL must be http/protobuf or http/json');
  });
});

describe('tracing off', () => {
  it('has no tracer, sends nothing, and answers a turn whose upgrade carried a traceparent as usual', async () => {
    const receiver = await OtlpReceiver.start();
    const stack = await startLlmStack();
    try {
      expect(stack.gateway.app.get(TracingService).enabled).toBe(false);
      const socket = await stack.connect('/', { traceparent: clientSpan().traceparent });
      stack.llm.reply({ toolCalls: [{ id: 'c1', name: 'calculator', arguments: { a: 1, b: 2 } }] }, { text: 'Three.' });
      socket.send({ type: 'text_input', text: 'one plus two' });
      expect((await socket.until('status', 'idle')).find((frame) => frame.type === 'llm_response').content).toBe('Three.');
      await socket.close();
    } finally {
      await stack.close();
    }
    expect(receiver.exports).toEqual([]);
    await receiver.close();
  });
});
