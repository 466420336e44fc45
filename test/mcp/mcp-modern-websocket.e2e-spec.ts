import WebSocket from 'ws';
import { ToolRegistryService } from '../../src/core/tools/tool-registry.service';
import { RunningGateway, startGateway } from '../support/gateway';
import { until } from '../support/upstreams';

const TOKEN = 'token-of-the-modern-socket-tests';
const MODERN = '2026-07-28';

/** The 2026 envelope a client puts in every request's `_meta`. */
const envelope = (revision = MODERN) => ({
  'io.modelcontextprotocol/protocolVersion': revision,
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'modern-socket-e2e', version: '1.0.0' },
});

interface Answer {
  id?: number;
  result?: Record<string, unknown>;
  error?: { code: number; message: string; data?: unknown };
}

/** A plain MCP WebSocket (subprotocol `mcp`) speaking 2026-07-28 frame by frame, as a client without an SDK would. */
class RawModernSocket {
  readonly answers: Answer[] = [];
  private constructor(readonly socket: WebSocket) {
    socket.on('message', (data) => this.answers.push(JSON.parse(String(data)) as Answer));
  }

  static async open(url: string): Promise<RawModernSocket> {
    const socket = new WebSocket(url, ['mcp']);
    await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
    return new RawModernSocket(socket);
  }

  send(message: Record<string, unknown>): void {
    this.socket.send(JSON.stringify({ jsonrpc: '2.0', ...message }));
  }

  async answerTo(id: number): Promise<Answer> {
    await until(() => this.answers.some((answer) => answer.id === id), 10_000, `the answer to request ${id}`);
    return this.answers.find((answer) => answer.id === id)!;
  }

  close(): void {
    this.socket.close();
  }
}

/**
 * A 2026-07-28 client over a plain WebSocket is served by one server of its own for the
 * connection's life (`Sdk2Binder.serveConnection`); what the HTTP handler checks on every
 * request, and what a connection bounds, holds for every message of it too.
 */
describe('MCP 2026-07-28 over a WebSocket: one server per connection, every message checked', () => {
  let gateway: RunningGateway;
  const sockets: RawModernSocket[] = [];
  /** Calls of `wait_until_stopped` running now, and how many were stopped. */
  const waiting = { running: 0, stopped: 0 };

  beforeAll(async () => {
    gateway = await startGateway({ AUTH_TOKENS: TOKEN, WS_MAX_CALLS_IN_FLIGHT: '2', MCP_WS_MAX_CONNECTIONS: '8' });
    gateway.app.get(ToolRegistryService).register({
      name: 'wait_until_stopped',
      description: 'Runs until its call is stopped',
      inputSchema: { type: 'object' },
      source: 'module',
      handler: (_args, { signal }) =>
        new Promise((_resolve, reject) => {
          waiting.running += 1;
          signal.addEventListener('abort', () => {
            waiting.running -= 1;
            waiting.stopped += 1;
            reject(new Error('stopped'));
          });
        }),
    });
  }, 60_000);

  afterAll(async () => {
    for (const socket of sockets) socket.close();
    await gateway?.close();
  });

  async function connect(): Promise<RawModernSocket> {
    const socket = await RawModernSocket.open(gateway.ws(`/mcp?token=${TOKEN}`));
    sockets.push(socket);
    return socket;
  }

  it('refuses a request naming another revision after the first, as a POST is refused, and goes on serving', async () => {
    const socket = await connect();
    socket.send({ id: 1, method: 'tools/list', params: { _meta: envelope() } });
    expect((await socket.answerTo(1)).result?.tools).toEqual(expect.arrayContaining([expect.objectContaining({ name: 'wait_until_stopped' })]));
    socket.send({ id: 2, method: 'tools/list', params: { _meta: envelope('2099-01-01') } });
    expect((await socket.answerTo(2)).error).toEqual({
      code: -32022,
      message: 'Unsupported protocol version: 2099-01-01',
      data: { supported: [MODERN], requested: '2099-01-01' },
    });
    socket.send({ id: 3, method: 'tools/list', params: { _meta: { ...envelope(), 'io.modelcontextprotocol/clientCapabilities': 5 } } });
    expect((await socket.answerTo(3)).error).toMatchObject({ code: -32602, message: expect.stringContaining('Invalid _meta envelope') });
    socket.send({ id: 4, method: 'no/such/method', params: { _meta: envelope() } });
    expect((await socket.answerTo(4)).error).toMatchObject({ code: -32601 });
    socket.send({ id: 5, method: 'tools/call', params: { name: 'no_such_tool', arguments: {}, _meta: envelope() } });
    expect((await socket.answerTo(5)).error).toMatchObject({ code: -32602, message: 'Unknown tool "no_such_tool"' });
    socket.send({ id: 6, method: 'tools/call', params: { name: 'get_current_time', arguments: {}, _meta: envelope() } });
    expect((await socket.answerTo(6)).result?.content).toBeDefined();
  });

  it('refuses a first request naming an unknown revision, then serves the right one', async () => {
    const socket = await connect();
    socket.send({ id: 1, method: 'tools/list', params: { _meta: envelope('2099-01-01') } });
    expect((await socket.answerTo(1)).error).toMatchObject({ code: -32022 });
    socket.send({ id: 2, method: 'tools/list', params: { _meta: envelope() } });
    expect((await socket.answerTo(2)).result?.tools).toBeDefined();
  });

  it('bounds the requests open at once (WS_MAX_CALLS_IN_FLIGHT), and a cancelled one frees its place and stops its call', async () => {
    const socket = await connect();
    const stoppedBefore = waiting.stopped;
    const call = (id: number) => socket.send({ id, method: 'tools/call', params: { name: 'wait_until_stopped', arguments: {}, _meta: envelope() } });
    call(1);
    call(2);
    await until(() => waiting.running === 2, 5_000, 'both calls running');
    call(3);
    expect((await socket.answerTo(3)).error).toMatchObject({ message: expect.stringContaining('at most 2 (WS_MAX_CALLS_IN_FLIGHT)') });

    socket.send({ method: 'notifications/cancelled', params: { requestId: 1, _meta: envelope() } });
    await until(() => waiting.stopped === stoppedBefore + 1, 5_000, 'the cancelled call stopped');
    call(4);
    await until(() => waiting.running === 2, 5_000, 'the next call running in the freed place');
    // MCP: a cancelled request gets no answer.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(socket.answers.filter((answer) => answer.id === 1)).toEqual([]);

    socket.close();
    await until(() => waiting.stopped === stoppedBefore + 3 && waiting.running === 0, 5_000, "the closed connection's calls stopped");
  });

  it("leaves a connection's 2025 session as it was: initialize and tools/list without the envelope beside 2026 requests", async () => {
    const socket = await connect();
    socket.send({ id: 1, method: 'tools/list', params: { _meta: envelope() } });
    await socket.answerTo(1);
    socket.send({
      id: 2,
      method: 'initialize',
      params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'legacy-beside', version: '1.0.0' } },
    });
    expect((await socket.answerTo(2)).result?.protocolVersion).toBe('2025-03-26');
    socket.send({ method: 'notifications/initialized' });
    socket.send({ id: 3, method: 'tools/list' });
    expect((await socket.answerTo(3)).result?.tools).toBeDefined();
  });
});
