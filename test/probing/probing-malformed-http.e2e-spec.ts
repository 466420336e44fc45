import { LlmStack, startLlmStack } from '../support/llm-stack';
import { LogCapture, NESTED, nestedArrays, nestedJson, pollutingKeys, prototypePolluted } from '../support/probing';
import { TestSocket } from '../support/test-socket';

const MCP_TOKEN = 'probe-mcp-token';
const JSON_HEADERS = { 'Content-Type': 'application/json' };

/** POSTs `body` (text as it is, anything else as JSON); the status and the parsed answer. */
async function post(url: string, body: unknown, headers: Record<string, string> = JSON_HEADERS): Promise<{ status: number; answer: any; text: string }> {
  const response = await fetch(url, { method: 'POST', headers, body: typeof body === 'string' ? body : JSON.stringify(body) });
  const text = await response.text();
  let answer: unknown;
  try {
    answer = JSON.parse(text.startsWith('event:') ? text.slice(text.indexOf('data: ') + 6) : text);
  } catch {
    answer = text;
  }
  return { status: response.status, answer, text };
}

/**
 * Malformed bodies on every HTTP route that takes one (LiteMCP and UTCP tool calls, MCP
 * Streamable HTTP), and the per-tool UTCP WebSocket route, whose every frame is a call's
 * arguments: each answered in the route's own words (status and body), never as an internal
 * error, and the route serves a good request afterwards.
 */
describe('probing: malformed bodies on the HTTP routes, and the per-tool UTCP route', () => {
  let stack: LlmStack;
  const log = new LogCapture();

  beforeAll(async () => {
    stack = await startLlmStack({ MCP_WS_AUTH_TOKEN: MCP_TOKEN, CLOUD_LOG_LEVEL: 'WARN' });
    log.start();
  });
  afterAll(async () => {
    log.stop();
    await stack.close();
  });

  describe('LiteMCP: POST /litemcp/calculator', () => {
    const url = () => stack.gateway.http('/litemcp/calculator');
    const refused = (status: number, answer: any, problem: RegExp) => {
      expect(status).toBe(400);
      expect(answer).toMatchObject({ version: [1, 0, 0], response: { error: true, content: [{ type: 'text', data: expect.stringMatching(problem) }] } });
    };
    afterEach(async () => {
      const { status, answer } = await post(url(), { tool: 'calculator', arguments: ['2', '3'] });
      expect({ status, answer }).toMatchObject({ status: 200, answer: { response: { error: false, content: [{ data: '5' }] } } });
    });

    it('answers "version": null with 400 and what is wrong, not 500', async () => {
      const { status, answer } = await post(url(), { version: null, tool: 'calculator', arguments: ['2', '3'] });
      refused(status, answer, /^version must be an array \[major, minor, patch\]$/);
    });

    it('answers text that is not JSON, JSON that is not an object, and wrong types with 400', async () => {
      const notJson = await post(url(), 'not json {');
      refused(notJson.status, notJson.answer, /not valid JSON/);
      const array = await post(url(), [1, 2]);
      refused(array.status, array.answer, /must be object/);
      const wrong = await post(url(), { tool: 7, arguments: 'two' });
      refused(wrong.status, wrong.answer, /tool must be a string; arguments must be an array/);
    });

    it('answers a body nested 10,000 deep with 400', async () => {
      const { status, answer } = await post(url(), nestedJson({ tool: 'calculator', arguments: ['1'], deep: NESTED }));
      refused(status, answer, /nests deeper than 64 levels/);
    });

    it('serves a call with __proto__ and constructor keys as without them, polluting nothing', async () => {
      const { status, answer } = await post(url(), { tool: 'calculator', arguments: ['2', '3'], ...pollutingKeys() });
      expect({ status, answer }).toMatchObject({ status: 200, answer: { response: { error: false, content: [{ data: '5' }] } } });
      expect(prototypePolluted()).toBe(false);
    });
  });

  describe('UTCP: POST /utcp/calculator', () => {
    const url = () => stack.gateway.http('/utcp/calculator');
    const refused = (status: number, answer: any, code: string, problem: RegExp) => {
      expect(status).toBe(400);
      expect(answer).toEqual({ type: 'tool_error', code, error: expect.stringMatching(problem) });
    };
    afterEach(async () => {
      expect(await post(url(), { a: 2, b: 3 })).toMatchObject({ status: 200, answer: 5 });
    });

    it('answers text that is not JSON, and a body that is not JSON, with 400 INVALID_MESSAGE', async () => {
      const notJson = await post(url(), 'not json {');
      refused(notJson.status, notJson.answer, 'INVALID_MESSAGE', /not valid JSON/);
      const plain = await post(url(), '{"a":1,"b":2}', { 'Content-Type': 'text/plain' });
      refused(plain.status, plain.answer, 'INVALID_MESSAGE', /Content-Type: application\/json/);
    });

    it('answers arguments that are not an object, of the wrong types, or nested 10,000 deep with 400 INVALID_TOOL_PARAMETERS', async () => {
      const array = await post(url(), [1, 2]);
      refused(array.status, array.answer, 'INVALID_TOOL_PARAMETERS', /arguments must be a JSON object/);
      const wrong = await post(url(), { a: 'two', b: [] });
      refused(wrong.status, wrong.answer, 'INVALID_TOOL_PARAMETERS', /argument "a" must be number; argument "b" must be number/);
      const deep = await post(url(), nestedJson({ a: 1, b: NESTED }));
      refused(deep.status, deep.answer, 'INVALID_TOOL_PARAMETERS', /nest deeper than 64 levels/);
    });

    it('treats __proto__ and constructor as the unknown arguments they are, polluting nothing', async () => {
      const { status, answer } = await post(url(), { a: 2, b: 3, ...pollutingKeys() });
      refused(status, answer, 'INVALID_TOOL_PARAMETERS', /unexpected argument "__proto__"; unexpected argument "constructor"/);
      expect(prototypePolluted()).toBe(false);
    });
  });

  describe('MCP Streamable HTTP: POST /mcp', () => {
    let headers: Record<string, string>;
    const send = (body: unknown) => post(stack.gateway.http('/mcp'), body, headers);

    beforeAll(async () => {
      headers = { ...JSON_HEADERS, Accept: 'application/json, text/event-stream', Authorization: `Bearer ${MCP_TOKEN}` };
      const response = await fetch(stack.gateway.http('/mcp'), {
        method: 'POST',
        headers,
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 0,
          method: 'initialize',
          params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'probe', version: '1' } },
        }),
      });
      expect(response.status).toBe(200);
      headers = { ...headers, 'Mcp-Session-Id': response.headers.get('mcp-session-id')!, 'Mcp-Protocol-Version': '2025-06-18' };
      await response.text();
      expect((await send({ jsonrpc: '2.0', method: 'notifications/initialized' })).status).toBe(202);
    });
    afterEach(async () => {
      expect(await send({ jsonrpc: '2.0', id: 'good', method: 'ping' })).toMatchObject({ status: 200, answer: { jsonrpc: '2.0', id: 'good', result: {} } });
    });

    it('answers text that is not JSON with 400 and -32700', async () => {
      expect(await send('not json {')).toMatchObject({ status: 400, answer: { jsonrpc: '2.0', id: null, error: { code: -32700 } } });
    });

    it('answers a request or a response nested 10,000 deep with 400 and -32600, not a stack overflow', async () => {
      const request = await send(nestedJson({ jsonrpc: '2.0', id: 1, method: 'ping', params: { deep: NESTED } }));
      expect(request).toMatchObject({
        status: 400,
        answer: { id: 1, error: { code: -32600, message: 'Invalid Request: the message nests deeper than 64 levels' } },
      });
      const response = await send(nestedJson({ jsonrpc: '2.0', id: 2, result: NESTED }));
      expect(response).toMatchObject({ status: 400, answer: { id: 2, error: { code: -32600 } } });
      expect((await send(nestedArrays(10_000))).status).toBe(400);
      expect(log.output).not.toMatch(/Maximum call stack/);
    });

    it('answers tools/list and tools/call with params of the wrong types with -32602, in one line', async () => {
      const list = await send({ jsonrpc: '2.0', id: 3, method: 'tools/list', params: { cursor: 5 } });
      expect(list.answer).toEqual({
        jsonrpc: '2.0',
        id: 3,
        error: { code: -32602, message: expect.stringMatching(/Invalid tools\/list params: cursor: [^\n]+$/) },
      });
      expect(list.answer.error.message).not.toContain('\n');
      const call = await send({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 7 } });
      expect(call.answer).toMatchObject({ id: 4, error: { code: -32602 } });
    });

    it('answers an unknown method with a 100 KB name with -32601, briefly', async () => {
      const { answer, text } = await send({ jsonrpc: '2.0', id: 5, method: 'x'.repeat(100_000) });
      expect(answer).toMatchObject({ id: 5, error: { code: -32601 } });
      expect(text.length).toBeLessThan(1_000);
    });

    it('serves a call with __proto__ and constructor keys in its params as without them, polluting nothing', async () => {
      const { answer } = await send({
        jsonrpc: '2.0',
        id: 6,
        method: 'tools/call',
        params: { name: 'calculator', arguments: { a: 2, b: 3 }, ...pollutingKeys() },
      });
      expect(answer).toMatchObject({ id: 6, result: { content: [{ type: 'text', text: '5' }] } });
      expect(prototypePolluted()).toBe(false);
    });
  });

  it('MCP over WebSocket: answers tools/list with params of the wrong types with -32602, in one line', async () => {
    const socket = await TestSocket.open(stack.gateway.ws('/mcp'), { headers: { Authorization: `Bearer ${MCP_TOKEN}` }, protocols: ['mcp'] });
    socket.send({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { cursor: { page: 2 } } });
    expect(await socket.next()).toEqual({
      jsonrpc: '2.0',
      id: 1,
      error: { code: -32602, message: expect.stringMatching(/Invalid tools\/list params: cursor: [^\n]+$/) },
    });
    socket.send({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
    expect((await socket.next()).result.tools.length).toBeGreaterThan(0);
    await socket.close();
  });

  describe('UTCP: the per-tool WebSocket route /utcp/calculator, whose frames are arguments', () => {
    let socket: TestSocket;
    beforeAll(async () => {
      socket = await TestSocket.open(stack.gateway.ws('/utcp/calculator'));
    });
    afterAll(() => socket.close());
    afterEach(async () => {
      socket.send({ a: 2, b: 3 });
      expect(await socket.next()).toBe(5);
    });

    it.each([
      ['text that is not JSON', 'not json {', 'INVALID_MESSAGE', /not valid JSON; send the arguments as a JSON object/],
      ['binary garbage', Buffer.from([0xff, 0xfe, 0x00]), 'INVALID_MESSAGE', /not valid JSON/],
      ['JSON that is not an object', '[1,2]', 'INVALID_TOOL_PARAMETERS', /arguments must be a JSON object/],
      ['arguments of the wrong types', '{"a":"two","b":null}', 'INVALID_TOOL_PARAMETERS', /argument "a" must be number/],
      ['arguments nested 10,000 deep', nestedJson({ a: 1, b: NESTED }), 'INVALID_TOOL_PARAMETERS', /nest deeper than 64 levels/],
      ['__proto__ and constructor keys', JSON.stringify({ a: 2, b: 3, ...pollutingKeys() }), 'INVALID_TOOL_PARAMETERS', /unexpected argument "__proto__"/],
    ])('answers %s with a tool_error frame', async (_name, raw, code, problem) => {
      if (Buffer.isBuffer(raw)) socket.socket.send(raw, { binary: true });
      else socket.send(raw);
      expect(await socket.next()).toEqual({ type: 'tool_error', code, error: expect.stringMatching(problem) });
      expect(prototypePolluted()).toBe(false);
    });
  });

  it('logged no stack trace and no internal error while probed', () => {
    expect(log.stackTraces()).toEqual([]);
    expect(log.output).not.toMatch(/Internal error|INTERNAL_ERROR|Maximum call stack/);
  });
});
