import { CLOSE_POLICY_VIOLATION, GatewayConnection } from '../../src/core/ws/connection';
import { ConnectionRegistry } from '../../src/core/ws/connection-registry';
import { MetricsService } from '../../src/metrics/metrics.service';
import { ToolRegistryService } from '../../src/core/tools/tool-registry.service';
import { IncomingMessage, request } from 'http';
import { LlmStack, startLlmStack } from '../support/llm-stack';
import { bearer, inSession, initializeOn, modernEnvelope } from '../support/mcp-http';
import { eventually } from '../support/probing';
import { TestSocket } from '../support/test-socket';

const MCP_TOKEN = 'slow-reader-mcp-token';
const MAX_BUFFERED_BYTES = 262_144;

/** A client that stops reading, on each protocol, and what it sends to make the gateway answer a lot. */
const READERS: [string, (stack: LlmStack) => Promise<TestSocket>, (index: number) => unknown][] = [
  // An error frame of ~250 bytes a frame (the unknown type is repeated, up to 64 characters).
  ['LLM gateway', (stack) => stack.connect(), () => ({ type: 'x'.repeat(64) })],
  ['LiteMCP', (stack) => TestSocket.open(stack.gateway.ws('/litemcp/calculator')), (id) => ({ version: [1, 0, 0], id, type: 'get' })],
  ['UTCP /utcp/calculator', (stack) => TestSocket.open(stack.gateway.ws('/utcp/calculator')), () => ({ a: 'one', b: 'two' })],
  [
    'MCP plain',
    (stack) => TestSocket.open(stack.gateway.ws('/mcp'), { headers: { Authorization: `Bearer ${MCP_TOKEN}` }, protocols: ['mcp'] }),
    (id) => ({ jsonrpc: '2.0', id, method: 'tools/list' }),
  ],
  [
    'MCP envelope',
    async (stack) => {
      const socket = await TestSocket.open(stack.gateway.ws('/mcp'));
      socket.send({ type: 'auth', token: MCP_TOKEN });
      expect(await socket.next()).toMatchObject({ status: 'authenticated' });
      return socket;
    },
    (id) => ({ type: 'message', payload: { jsonrpc: '2.0', id, method: 'tools/list' } }),
  ],
];

/**
 * A client that stops reading while the gateway answers it, on every protocol (UTCP's manual
 * flood is in connection-caps.e2e-spec.ts): once more than WS_MAX_BUFFERED_BYTES wait for it,
 * it is closed with 1008 and everything it held is let go, so the gateway's memory grows by
 * about that bound, not by what the client asked for (tens of megabytes here).
 */
describe('probing: slow readers on every protocol', () => {
  let stack: LlmStack;
  const closes: { id: string; code: number; reason: string }[] = [];
  let spy: jest.SpyInstance;

  beforeAll(async () => {
    stack = await startLlmStack({ MCP_WS_AUTH_TOKEN: MCP_TOKEN, WS_MAX_BUFFERED_BYTES: MAX_BUFFERED_BYTES });
    const close = GatewayConnection.prototype.close;
    spy = jest.spyOn(GatewayConnection.prototype, 'close').mockImplementation(function (this: GatewayConnection, code: number, reason: string) {
      closes.push({ id: this.id, code, reason });
      return close.call(this, code, reason);
    });
  });
  afterAll(async () => {
    spy.mockRestore();
    await stack.close();
  });

  /** Frames the gateway has handled (answered or refused), every protocol together. */
  async function framesHandled(): Promise<number> {
    const metric = await stack.gateway.app.get(MetricsService).registry.getSingleMetric('gateway_frames_total')!.get();
    return metric.values.reduce((sum, { value }) => sum + value, 0);
  }

  it.each(READERS)('%s: closed with 1008 once the bound waits for it, with memory held to about the bound', async (_name, open, request) => {
    const connections = stack.gateway.app.get(ConnectionRegistry);
    const reader = await open(stack);
    const [connection] = connections.list();
    (reader.socket as unknown as { _socket: { pause(): void } })._socket.pause();
    const before = process.memoryUsage().rss;
    let sent = 0;
    const closed = () => closes.some((entry) => entry.id === connection.id);
    // Up to 60,000 requests, tens of megabytes of answers; the client stops once the gateway has closed it.
    const started = Date.now();
    while (sent < 60_000 && !closed() && Date.now() - started < 15_000) {
      for (let batch = 0; batch < 500; batch += 1) reader.send(request(sent++));
      await new Promise((resolve) => setImmediate(resolve));
    }
    // What the client sends once the gateway is closing it is dropped, not handled.
    const handled = await framesHandled();
    for (let batch = 0; batch < 500; batch += 1) reader.send(request(sent++));
    await eventually(() => connections.size === 0, 'the slow reader closed', 15_000);
    expect(await framesHandled()).toBe(handled);
    expect(closes.find((entry) => entry.id === connection.id)).toEqual({
      id: connection.id,
      code: CLOSE_POLICY_VIOLATION,
      reason: `Client is not reading: over ${MAX_BUFFERED_BYTES} bytes wait to be sent`,
    });
    expect(sent).toBeLessThan(60_000);
    expect(process.memoryUsage().rss - before).toBeLessThan(64 * 1024 * 1024);
    reader.socket.terminate();
  });

  /** A tool that tells its caller its progress in 10 KB messages, as fast as it can, until its call is stopped. */
  function firehoseOfProgress(name: string) {
    const seen = { pieces: 0, stopped: false };
    stack.gateway.app.get(ToolRegistryService).register({
      name,
      description: 'Tells its progress in 10 KB messages as fast as it can',
      source: 'module',
      inputSchema: { type: 'object' },
      // Only its client may stop it, not its time limit.
      timeoutMs: 120_000,
      handler: async (_args, { caller, signal }) => {
        const message = 'x'.repeat(10_000);
        try {
          while (!signal.aborted) {
            seen.pieces += 1;
            await caller?.progress?.({ progress: seen.pieces, message });
            await new Promise((resolve) => setImmediate(resolve));
          }
          return 'stopped';
        } finally {
          seen.stopped = true;
        }
      },
    });
    return seen;
  }

  /** A POST to `/mcp` whose response the client does not read once its head has come. */
  async function postAndStopReading(headers: Record<string, string>, body: unknown): Promise<IncomingMessage> {
    const call = request(stack.gateway.http('/mcp'), {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...bearer(MCP_TOKEN), ...headers },
    });
    call.on('error', () => undefined);
    call.end(JSON.stringify(body));
    const response = await new Promise<IncomingMessage>((resolve) => call.once('response', resolve));
    response.on('error', () => undefined);
    response.pause();
    expect(response.headers['content-type']).toMatch(/^text\/event-stream/);
    return response;
  }

  it.each([
    [
      'a 2025 session',
      async () => {
        const { sessionId } = await initializeOn(stack.gateway, MCP_TOKEN);
        return { headers: inSession(sessionId!), meta: { progressToken: 'p' } };
      },
    ],
    [
      '2026-07-28',
      async () => ({
        headers: { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'probe.mcp_firehose_2026' },
        meta: { ...modernEnvelope(), progressToken: 'p' },
      }),
    ],
  ])('MCP Streamable HTTP, %s: a response stream whose client stops reading is cut off at the bound, and its call stopped', async (revision, open) => {
    const name = revision === '2026-07-28' ? 'probe.mcp_firehose_2026' : 'probe.mcp_firehose_2025';
    const seen = firehoseOfProgress(name);
    const { headers, meta } = await open();
    const before = process.memoryUsage().rss;
    const response = await postAndStopReading(headers, { jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name, arguments: {}, _meta: meta } });
    await eventually(() => seen.stopped, 'the call of the client that stopped reading stopped', 10_000);
    // The bound, and what the kernel's socket buffers took before it: a few megabytes, not all the tool said.
    expect(seen.pieces * 10_000).toBeLessThan(32 * 1024 * 1024);
    expect(process.memoryUsage().rss - before).toBeLessThan(64 * 1024 * 1024);
    response.destroy();
  });

  it('UTCP over HTTP: an event stream whose client stops reading is cut off at the bound, and its call stopped', async () => {
    let pieces = 0;
    let stopped = false;
    stack.gateway.app.get(ToolRegistryService).register({
      name: 'probe.firehose',
      description: 'Streams 10 KB pieces as fast as it can',
      source: 'module',
      inputSchema: { type: 'object' },
      handler: async function* () {
        const piece = 'x'.repeat(10_000);
        try {
          for (;;) {
            pieces += 1;
            yield piece;
            await new Promise((resolve) => setImmediate(resolve));
          }
        } finally {
          stopped = true;
        }
      },
    });
    const call = request(stack.gateway.http('/utcp/probe.firehose?stream=true'), { method: 'POST', headers: { 'Content-Type': 'application/json' } });
    call.on('error', () => undefined);
    call.end('{}');
    const response = await new Promise<IncomingMessage>((resolve) => call.once('response', resolve));
    response.on('error', () => undefined);
    response.pause();
    const before = process.memoryUsage().rss;
    await eventually(() => stopped, 'the streaming call stopped', 10_000);
    // The bound, and what the kernel's socket buffers took before it: a few megabytes, not the gigabyte of before.
    expect(pieces * 10_000).toBeLessThan(32 * 1024 * 1024);
    expect(process.memoryUsage().rss - before).toBeLessThan(64 * 1024 * 1024);
    response.destroy();
  });
});
