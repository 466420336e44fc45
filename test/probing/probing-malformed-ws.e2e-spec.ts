import { CalculatorModule } from '../../src/examples/calculator/calculator.module';
import { LlmStack, startLlmStack } from '../support/llm-stack';
import { LogCapture, NESTED, nestedArrays, nestedJson, pollutingKeys, prototypePolluted } from '../support/probing';
import { TestSocket } from '../support/test-socket';

const MCP_TOKEN = 'probe-mcp-token';

/** One WebSocket route under probe: how to open it ready for work, a frame it serves, and its words for a refusal. */
interface ProbedRoute {
  name: string;
  open(stack: LlmStack): Promise<TestSocket>;
  /** A request the route serves (fresh each time: LiteMCP ignores a repeated id), and a check of its answer. */
  good(): { frame: Record<string, unknown>; check(answer: any): void };
  /** The route's answer to a frame it cannot read or that breaks its rules. */
  refused(answer: any, kind: 'unreadable' | 'invalid' | 'unknown-type'): void;
  /** A frame of the right type with fields of the wrong types. */
  wrongTypes: string;
  /** `frame` with `extra` members where the protocol allows members it does not know (top level unless said otherwise). */
  extend?(frame: Record<string, unknown>, extra: Record<string, unknown>): Record<string, unknown>;
}

let liteMcpId = 0;

const ROUTES: ProbedRoute[] = [
  ...['/', '/llm'].map((path): ProbedRoute => ({
    name: `LLM gateway ${path}`,
    open: (stack) => stack.connect(path),
    good: () => ({ frame: { type: 'ping' }, check: (answer) => expect(answer).toMatchObject({ type: 'pong' }) }),
    refused: (answer, kind) =>
      expect(answer).toEqual({
        type: 'error',
        code: kind === 'unknown-type' ? 'UNKNOWN_MESSAGE_TYPE' : 'INVALID_MESSAGE',
        message: expect.any(String),
        timestamp: expect.any(String),
      }),
    wrongTypes: JSON.stringify({ type: 'text_input', text: 42, session_id: [], turn_id: {} }),
  })),
  {
    name: 'LiteMCP /litemcp/calculator',
    open: (stack) => TestSocket.open(stack.gateway.ws('/litemcp/calculator')),
    good: () => {
      const id = ++liteMcpId;
      return {
        frame: { version: [1, 0, 0], id, type: 'get', data: null },
        check: (answer) => expect(answer).toMatchObject({ id, type: 'info', data: { name: 'calculator' } }),
      };
    },
    refused: (answer, kind) =>
      expect(answer).toMatchObject({
        version: [1, 0, 0],
        type: 'error',
        data: { code: kind === 'unknown-type' ? 'UNKNOWN_MESSAGE_TYPE' : 'INVALID_MESSAGE', message: expect.any(String) },
      }),
    wrongTypes: JSON.stringify({ version: 'one', id: 'x', type: 'get', data: 7 }),
  },
  {
    name: 'UTCP /utcp',
    open: (stack) => TestSocket.open(stack.gateway.ws('/utcp')),
    good: () => ({
      frame: { type: 'call', id: 'good', tool: 'calculator', params: { a: 2, b: 3 } },
      check: (answer) => expect(answer).toMatchObject({ type: 'result', id: 'good', result: 5 }),
    }),
    refused: (answer, kind) =>
      expect(answer).toMatchObject({
        type: 'error',
        error: { code: kind === 'unknown-type' ? 'UNKNOWN_MESSAGE_TYPE' : 'INVALID_MESSAGE', message: expect.any(String) },
      }),
    wrongTypes: JSON.stringify({ type: 'call', id: [], tool: 5 }),
  },
  {
    name: 'MCP envelope /mcp',
    open: async (stack) => {
      const socket = await TestSocket.open(stack.gateway.ws('/mcp'));
      socket.send({ type: 'auth', token: MCP_TOKEN });
      expect(await socket.next()).toMatchObject({ type: 'auth', status: 'authenticated' });
      return socket;
    },
    good: () => ({
      frame: { type: 'message', payload: { jsonrpc: '2.0', id: 'good', method: 'ping' } },
      check: (answer) => expect(answer).toMatchObject({ type: 'message', payload: { jsonrpc: '2.0', id: 'good', result: {} } }),
    }),
    refused: (answer, kind) =>
      expect(answer).toMatchObject({ type: 'error', error: { code: kind === 'unreadable' ? -32700 : -32600, message: expect.any(String) } }),
    wrongTypes: JSON.stringify({ type: 'message', payload: 'not an object', sessionId: 9 }),
  },
  {
    name: 'MCP plain (subprotocol mcp) /mcp',
    open: (stack) => TestSocket.open(stack.gateway.ws('/mcp'), { headers: { Authorization: `Bearer ${MCP_TOKEN}` }, protocols: ['mcp'] }),
    good: () => ({
      frame: { jsonrpc: '2.0', id: 'good', method: 'ping' },
      check: (answer) => expect(answer).toEqual({ jsonrpc: '2.0', id: 'good', result: {} }),
    }),
    // Plain MCP has no types: a frame of an unknown `type` is an invalid JSON-RPC message like any other.
    refused: (answer, kind) => expect(answer).toMatchObject({ jsonrpc: '2.0', error: { code: kind === 'unreadable' ? -32700 : -32600 } }),
    wrongTypes: JSON.stringify({ jsonrpc: 2, id: {}, method: 7 }),
    // A JSON-RPC message has no other members (the SDK's schemas are strict): what a client adds goes in params.
    extend: (frame, extra) => ({ ...frame, params: { ...(frame.params as object), ...extra } }),
  },
];

/**
 * Malformed frames on every WebSocket route: each is answered in the route's own words (never
 * an internal error), nothing is logged with a stack trace, and the connection serves the next
 * good frame. What a protocol closes on (an oversized LLM frame: 1009) is in its own suite.
 */
describe('probing: malformed frames on every WebSocket route', () => {
  let stack: LlmStack;
  const log = new LogCapture();

  beforeAll(async () => {
    stack = await startLlmStack({ MCP_WS_AUTH_TOKEN: MCP_TOKEN, CLOUD_LOG_LEVEL: 'WARN' }, [CalculatorModule]);
    log.start();
  });
  afterAll(async () => {
    log.stop();
    await stack.close();
  });

  describe.each(ROUTES)('$name', (route) => {
    let socket: TestSocket;
    beforeAll(async () => {
      socket = await route.open(stack);
    });
    afterAll(() => socket.close());
    const extend = route.extend ?? ((frame, extra) => ({ ...frame, ...extra }));

    /** Sends `raw`, checks its answer, then checks the connection still serves a good frame. */
    async function probe(raw: string | Buffer, check: (answer: any) => void): Promise<void> {
      if (Buffer.isBuffer(raw)) socket.socket.send(raw, { binary: true });
      else socket.send(raw);
      const answer = await socket.next();
      check(answer);
      expect(JSON.stringify(answer)).not.toMatch(/Internal error|INTERNAL_ERROR|-32603|\s{2,}at \S+ \(/);
      const { frame, check: checkGood } = route.good();
      socket.send(frame);
      checkGood(await socket.next());
    }

    it('refuses text that is not JSON, and binary garbage, as unreadable', async () => {
      await probe('not json {', (answer) => route.refused(answer, 'unreadable'));
      await probe(Buffer.from([0xff, 0xfe, 0x00, 0x81, 0x7b]), (answer) => route.refused(answer, 'unreadable'));
    });

    it('refuses JSON that is not an object: an array, a number, a string, null', async () => {
      for (const raw of ['[1,2,3]', '42', '"hello"', 'null', 'true']) {
        await probe(raw, (answer) => route.refused(answer, 'invalid'));
      }
    });

    it('refuses fields of the wrong types, a type that is not a string, and a type it does not know', async () => {
      await probe(route.wrongTypes, (answer) => route.refused(answer, 'invalid'));
      await probe('{"type":7}', (answer) => route.refused(answer, 'invalid'));
      await probe('{"type":"no_such_frame"}', (answer) => route.refused(answer, route.name.startsWith('MCP') ? 'invalid' : 'unknown-type'));
    });

    it('refuses a field nested 10,000 deep as an invalid message, and a bare 10,000-deep array', async () => {
      await probe(nestedJson(extend(route.good().frame, { deep: NESTED })), (answer) => route.refused(answer, 'invalid'));
      await probe(nestedArrays(10_000), (answer) => route.refused(answer, 'invalid'));
    });

    it('answers a huge unknown type with a small refusal: the type is not echoed whole', async () => {
      const huge = JSON.stringify({ type: 'x'.repeat(200_000) });
      await probe(huge, (answer) => {
        route.refused(answer, route.name.startsWith('MCP') ? 'invalid' : 'unknown-type');
        expect(JSON.stringify(answer).length).toBeLessThan(2_000);
      });
    });

    it('serves a good frame carrying a 512 KB string as it serves it without one', async () => {
      const { frame, check } = route.good();
      socket.send(extend(frame, { padding: 'p'.repeat(512 * 1024) }));
      check(await socket.next());
    });

    it('serves a frame with __proto__ and constructor keys as it serves it without them, and pollutes nothing', async () => {
      const { frame, check } = route.good();
      socket.send(extend(frame, pollutingKeys()));
      check(await socket.next());
      expect(prototypePolluted()).toBe(false);
    });

    it('answers the same binary frame holding good JSON as the text frame', async () => {
      const { frame, check } = route.good();
      socket.socket.send(Buffer.from(JSON.stringify(frame)), { binary: true });
      check(await socket.next());
    });
  });

  it('LiteMCP: answers "version": null with the invalid-message answer, not an internal error, on get and inside a call', async () => {
    const socket = await TestSocket.open(stack.gateway.ws('/litemcp/calculator'));
    socket.send({ version: null, id: 90_001, type: 'get', data: null });
    expect(await socket.next()).toEqual({
      version: [1, 0, 0],
      id: 90_001,
      type: 'error',
      data: { code: 'INVALID_MESSAGE', message: 'version must be an array [major, minor, patch]' },
    });
    socket.send({ version: [1, 0, 0], id: 90_002, type: 'call', data: { version: null, tool: 'calculator', arguments: ['2', '3'] } });
    expect(await socket.next()).toMatchObject({
      id: 90_002,
      type: 'result',
      data: { response: { error: true, content: [{ data: 'data.version must be an array [major, minor, patch]' }] } },
    });
    socket.send({ version: [1, 0, 0], id: 90_003, type: 'call', data: { tool: 'calculator', arguments: ['2', '3'] } });
    expect(await socket.next()).toMatchObject({ id: 90_003, type: 'result', data: { response: { error: false, content: [{ data: '5' }] } } });
    await socket.close();
  });

  it('logged no stack trace and no internal error while probed', () => {
    expect(log.stackTraces()).toEqual([]);
    expect(log.output).not.toMatch(/Internal error|INTERNAL_ERROR/);
  });
});
