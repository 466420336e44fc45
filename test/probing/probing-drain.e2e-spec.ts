import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { listeningPort, MainProcess, startMain } from '../support/main-process';
import { EnvelopeClient } from '../support/mcp-envelope-client';
import { TestSocket } from '../support/test-socket';

const TOKEN = 'drain-probe-token';
const BEARER = { Authorization: `Bearer ${TOKEN}` };
const JSON_BODY = { 'Content-Type': 'application/json' };
const GOING_AWAY = { code: 1001, reason: 'Server shutting down' };
/** A frame or an HTTP answer may take this long to come: a bound on a wait, never an assertion. */
const PATIENCE_MS = 25_000;

/** A countdown in flight on one protocol: its answer, and how its connection ended, when it has one. */
interface InFlight {
  answer: Promise<any>;
  ended?: Promise<unknown>;
}

/** One protocol's caller of `countdown`, and what it must hear in each case, in that protocol's words. */
interface Caller {
  name: string;
  start(port: number, seconds: number): Promise<InFlight>;
  /** The countdown's last update. */
  finished: unknown;
  /** The failure of a call the shutdown cut short. */
  cut: unknown;
  /** How its connection ends, after the answer. */
  endedWith?: unknown;
}

/** What every protocol says of a call the shutdown cut short (SHUTDOWN_DRAIN_TIMEOUT is 2 s there). */
const SHUT_DOWN = expect.stringMatching(/^The gateway is shutting down and the call did not finish within 2 s \(SHUTDOWN_DRAIN_TIMEOUT\); call again$/);
const COUNTDOWN_OVER = { remaining_s: 0, done: true };

/** The frame that answers a call on `/utcp`, after the partial results it streams. */
async function lastUtcpFrame(socket: TestSocket): Promise<any> {
  for (let frame = 0; frame < 1000; frame += 1) {
    const next = await socket.next(PATIENCE_MS);
    if (next.partial !== true) return next;
  }
  throw new Error('No final frame after 1000 partial results');
}

const httpAnswer = async (response: Response) => ({ status: response.status, body: await response.json() });

const CALLERS: Caller[] = [
  {
    name: 'MCP Streamable HTTP, the SDK client',
    async start(port, seconds) {
      const client = new Client({ name: 'drain-probe', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`), { requestInit: { headers: BEARER } }));
      const answer = client.callTool({ name: 'countdown', arguments: { seconds } }, undefined, { timeout: PATIENCE_MS }).finally(() => client.close());
      return { answer };
    },
    finished: { structuredContent: COUNTDOWN_OVER },
    cut: { isError: true, content: [{ type: 'text', text: SHUT_DOWN }] },
  },
  {
    name: 'MCP plain WebSocket',
    async start(port, seconds) {
      const socket = await TestSocket.open(`ws://127.0.0.1:${port}/mcp`, { headers: BEARER, protocols: ['mcp'] });
      socket.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'countdown', arguments: { seconds } } });
      return { answer: socket.next(PATIENCE_MS), ended: socket.closed };
    },
    finished: { jsonrpc: '2.0', id: 1, result: { structuredContent: COUNTDOWN_OVER } },
    cut: { jsonrpc: '2.0', id: 1, result: { isError: true, content: [{ type: 'text', text: SHUT_DOWN }] } },
    endedWith: GOING_AWAY,
  },
  {
    name: 'MCP WebSocket envelope',
    async start(port, seconds) {
      const client = await EnvelopeClient.connect(`ws://127.0.0.1:${port}/mcp`, TOKEN);
      const answer = client.request('tools/call', { name: 'countdown', arguments: { seconds } }, PATIENCE_MS);
      const goodbye = client.nextOfType('close', PATIENCE_MS).then(({ type, reason }) => ({
        type,
        reason,
        afterAnswer: client.received.some((frame) => frame.type === 'message' && frame.payload?.id === 1),
      }));
      return { answer, ended: goodbye };
    },
    finished: { structuredContent: COUNTDOWN_OVER },
    cut: { isError: true, content: [{ type: 'text', text: SHUT_DOWN }] },
    endedWith: { type: 'close', reason: 'Server shutting down', afterAnswer: true },
  },
  {
    name: 'UTCP WebSocket /utcp',
    async start(port, seconds) {
      const socket = await TestSocket.open(`ws://127.0.0.1:${port}/utcp`);
      socket.send({ type: 'call', id: 'timer', tool: 'countdown', params: { seconds } });
      return { answer: lastUtcpFrame(socket), ended: socket.closed };
    },
    finished: { type: 'result', id: 'timer', result: COUNTDOWN_OVER },
    cut: { type: 'error', id: 'timer', error: { code: 'TOOL_UNAVAILABLE', message: SHUT_DOWN } },
    endedWith: GOING_AWAY,
  },
  {
    name: 'UTCP WebSocket /utcp/countdown',
    async start(port, seconds) {
      const socket = await TestSocket.open(`ws://127.0.0.1:${port}/utcp/countdown`);
      socket.send({ seconds });
      return { answer: socket.next(PATIENCE_MS), ended: socket.closed };
    },
    finished: COUNTDOWN_OVER,
    cut: { type: 'tool_error', error: SHUT_DOWN, code: 'TOOL_UNAVAILABLE' },
    endedWith: GOING_AWAY,
  },
  {
    name: 'UTCP HTTP POST /utcp/countdown',
    async start(port, seconds) {
      const request = { method: 'POST', headers: JSON_BODY, body: JSON.stringify({ seconds }), signal: AbortSignal.timeout(PATIENCE_MS) };
      return { answer: fetch(`http://127.0.0.1:${port}/utcp/countdown`, request).then(httpAnswer) };
    },
    finished: { status: 200, body: COUNTDOWN_OVER },
    cut: { status: 503, body: { type: 'tool_error', error: SHUT_DOWN, code: 'TOOL_UNAVAILABLE' } },
  },
  {
    name: 'LiteMCP WebSocket /litemcp/countdown',
    async start(port, seconds) {
      const socket = await TestSocket.open(`ws://127.0.0.1:${port}/litemcp/countdown`);
      socket.send({ version: [1, 0, 0], id: 1, type: 'call', data: { version: [1, 0, 0], tool: 'countdown', arguments: [String(seconds)] } });
      return { answer: socket.next(PATIENCE_MS), ended: socket.closed };
    },
    finished: { id: 1, type: 'result', data: { response: { error: false, content: [{ type: 'json', data: expect.stringContaining('"done":true') }] } } },
    cut: { id: 1, type: 'result', data: { response: { error: true, content: [{ type: 'text', data: SHUT_DOWN }] } } },
    endedWith: GOING_AWAY,
  },
  {
    name: 'LiteMCP HTTP POST /litemcp/countdown',
    async start(port, seconds) {
      const body = JSON.stringify({ version: [1, 0, 0], tool: 'countdown', arguments: [String(seconds)] });
      const request = { method: 'POST', headers: JSON_BODY, body, signal: AbortSignal.timeout(PATIENCE_MS) };
      return { answer: fetch(`http://127.0.0.1:${port}/litemcp/countdown`, request).then(httpAnswer) };
    },
    finished: { status: 200, body: { response: { error: false, content: [{ type: 'json', data: expect.stringContaining('"done":true') }] } } },
    cut: { status: 503, body: { response: { error: true, content: [{ type: 'text', data: SHUT_DOWN }] } } },
  },
];

/** Waits until the gateway counts `count` tool calls running (its `/metrics`), so each is in flight when SIGTERM comes. */
async function untilRunning(port: number, count: number): Promise<void> {
  let running = -1;
  for (let attempt = 0; attempt < 400 && running !== count; attempt += 1) {
    if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, 25));
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    running = Number(/^gateway_tool_calls_running (\d+)$/m.exec(metrics)?.[1]);
  }
  expect(running).toBe(count);
}

const started: MainProcess[] = [];

/** What each protocol got, by its name, a failure as its message: one diff shows every protocol. */
async function byProtocol(results: (Promise<unknown> | undefined)[]): Promise<Record<string, unknown>> {
  const settled = await Promise.allSettled(results);
  return Object.fromEntries(
    settled.map((result, index) => [CALLERS[index].name, result.status === 'fulfilled' ? result.value : { failed: String(result.reason) }]),
  );
}

const expected = (what: (caller: Caller) => unknown): Record<string, unknown> => Object.fromEntries(CALLERS.map((caller) => [caller.name, what(caller)]));

/** The gateway in a process of its own, a countdown of `seconds` in flight on every protocol, then SIGTERM. */
async function terminatedWithCallsInFlight(drainTimeoutS: number, seconds: number): Promise<{ main: MainProcess; calls: InFlight[]; terminatedAt: number }> {
  const main = startMain({ MCP_WS_AUTH_TOKEN: TOKEN, MCP_WS_MAX_CONNECTIONS: '2', SHUTDOWN_DRAIN_TIMEOUT: String(drainTimeoutS), CLOUD_LOG_LEVEL: 'INFO' });
  started.push(main);
  const port = await listeningPort(main.output);
  const calls = await Promise.all(CALLERS.map((caller) => caller.start(port, seconds)));
  await untilRunning(port, CALLERS.length);
  const terminatedAt = performance.now();
  main.child.kill('SIGTERM');
  return { main, calls, terminatedAt };
}

/**
 * SIGTERM with a tool call in flight on every protocol but the LLM gateway's (whose turns
 * `graceful-shutdown` covers): the drain waits for every call, whatever protocol it came by,
 * answers it in that protocol's words, and only then closes the sessions and sockets.
 */
describe('probing: drain per protocol on SIGTERM', () => {
  afterEach(() => {
    for (const main of started.splice(0)) if (main.child.exitCode === null) main.child.kill('SIGKILL');
  });

  it('lets every call in flight finish and answers it before its socket closes with 1001, within SHUTDOWN_DRAIN_TIMEOUT', async () => {
    const drainTimeoutS = 20;
    const { main, calls, terminatedAt } = await terminatedWithCallsInFlight(drainTimeoutS, 5);
    expect(await byProtocol(calls.map((call) => call.answer))).toMatchObject(expected((caller) => caller.finished));
    expect(await byProtocol(calls.map((call) => call.ended))).toEqual(expected((caller) => caller.endedWith));
    expect(await main.exited).toBe(0);
    expect(performance.now() - terminatedAt).toBeLessThan(drainTimeoutS * 1000);
    expect(main.output()).toMatch(/Work in flight finished/);
  }, 60_000);

  it("answers the calls still running at SHUTDOWN_DRAIN_TIMEOUT with an error in each protocol's words, then closes their sockets with 1001", async () => {
    const { main, calls } = await terminatedWithCallsInFlight(2, 600);
    expect(await byProtocol(calls.map((call) => call.answer))).toMatchObject(expected((caller) => caller.cut));
    expect(await byProtocol(calls.map((call) => call.ended))).toEqual(expected((caller) => caller.endedWith));
    expect(await main.exited).toBe(0);
    expect(main.output()).toContain(`Work still in flight after 2 s (${CALLERS.length} tool calls answered with an error); closing anyway`);
  }, 60_000);
});
