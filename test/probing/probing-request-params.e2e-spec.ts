import { RunningGateway, startGateway } from '../support/gateway';
import { HttpUpstream } from '../support/http-upstream';
import { bearer, initializeOn, inSession, mcpHttp, modernEnvelope, modernRequest } from '../support/mcp-http';
import { serversFile, upstreamIn } from '../support/upstreams';
import { TestSocket } from '../support/test-socket';

const TOKEN = 'probe-request-params-token';
const UPSTREAM_TOKEN = 'probe-request-params-upstream';

/** Longest refusal a malformed request may get: a few sentences, never a dump of every issue. */
const SMALL = 1_500;

const LEVELS = '"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"';

/**
 * MCP requests whose params the SDK's own schemas refuse, before any handler of the gateway runs:
 * the SDKs word the refusal as zod's multi-line dump of issues (and a failed parse of the params
 * as -32603, a fault of the server). Each answer is -32602, one line, one sentence per problem.
 */
const MALFORMED_2025: [string, Record<string, unknown>, string][] = [
  ['tools/call', { name: 5, arguments: [] }, 'MCP error -32602: Invalid tools/call request: name must be a string; arguments must be an object'],
  ['tools/call', { arguments: {} }, 'MCP error -32602: Invalid tools/call request: name is required'],
  ['tools/call', { name: 'calculator', arguments: {}, task: { ttl: 'soon' } }, 'MCP error -32602: Invalid tools/call request: task.ttl must be a number'],
  ['resources/read', { uri: 5 }, 'Invalid params: uri must be a string'],
  ['prompts/get', { name: 'greet', arguments: { who: 1 } }, 'Invalid params: arguments.who must be a string'],
  ['logging/setLevel', { level: 'loud' }, `Invalid params: level must be one of: ${LEVELS}`],
];

const MALFORMED_2026: [string, Record<string, unknown>, string][] = [
  ['tools/call', { name: 5, arguments: [] }, 'Invalid tools/call request: name must be a string; arguments must be an object'],
  ['tools/list', { cursor: 5 }, 'Invalid params: cursor must be a string'],
  ['resources/read', { uri: 5 }, 'Invalid params: uri must be a string'],
  ['prompts/get', { name: 'greet', arguments: { who: 1 } }, 'Invalid params: arguments.who must be a string'],
];

/** A prompt's arguments, every one of the wrong type: the SDK makes an issue of each. */
const manyWrongArguments = (count = 5_000) => Object.fromEntries(Array.from({ length: count }, (_, index) => [`k${index}`, index]));

function expectOneSentenceEach(error: { code: number; message: string } | undefined, message: string): void {
  expect(error).toEqual({ code: -32602, message });
}

describe('probing: MCP request params the SDK refuses, on every MCP transport', () => {
  let upstream: HttpUpstream;
  let servers: ReturnType<typeof serversFile>;
  let gateway: RunningGateway;

  beforeAll(async () => {
    upstream = await HttpUpstream.start(UPSTREAM_TOKEN, []);
    servers = serversFile({ up: { url: upstream.url(), headers: { Authorization: `Bearer ${UPSTREAM_TOKEN}` } } });
    gateway = await startGateway({ AUTH_TOKENS: TOKEN, MCP_WS_MAX_CONNECTIONS: 4, MCP_SERVERS_FILE: servers.path });
    await upstreamIn(gateway, 'up', 'connected');
  }, 60_000);

  afterAll(async () => {
    await gateway?.close();
    await upstream?.kill();
    servers?.remove();
  });

  /** A plain MCP WebSocket of the 2025 revision, initialized. */
  async function session2025(): Promise<TestSocket> {
    const socket = await TestSocket.open(gateway.ws('/mcp'), { headers: bearer(TOKEN), protocols: ['mcp'] });
    socket.send({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'probe', version: '1' } },
    });
    expect((await socket.next()).result).toBeDefined();
    socket.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    return socket;
  }

  it('2025 over a WebSocket: -32602 in one sentence per problem, then serves the next request', async () => {
    const socket = await session2025();
    let id = 1;
    for (const [method, params, message] of MALFORMED_2025) {
      socket.send({ jsonrpc: '2.0', id, method, params });
      const answer = await socket.next();
      expect(answer.id).toBe(id++);
      expectOneSentenceEach(answer.error, message);
    }
    socket.send({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'calculator', arguments: { a: 2, b: 3 } } });
    expect(await socket.next()).toMatchObject({ id, result: { content: [{ type: 'text', text: '5' }] } });
    await socket.close();
  });

  it('2025 over Streamable HTTP: the same answers', async () => {
    const { sessionId } = await initializeOn(gateway, TOKEN);
    const headers = { ...bearer(TOKEN), ...inSession(sessionId!) };
    let id = 1;
    for (const [method, params, message] of MALFORMED_2025) {
      const answer = await mcpHttp(gateway, { body: { jsonrpc: '2.0', id: id++, method, params }, headers });
      const data = answer.text.split('\n').find((line) => line.startsWith('data: '));
      expectOneSentenceEach(JSON.parse(data ? data.slice('data: '.length) : answer.text).error, message);
    }
  });

  it('2026-07-28 over HTTP: the same answers', async () => {
    for (const [method, params, message] of MALFORMED_2026) {
      expectOneSentenceEach((await modernRequest(gateway, TOKEN, method, params)).error, message);
    }
  });

  it('2026-07-28 over a WebSocket: the same answers', async () => {
    const socket = await TestSocket.open(gateway.ws(`/mcp?token=${TOKEN}`), { protocols: ['mcp'] });
    let id = 1;
    for (const [method, params, message] of MALFORMED_2026) {
      socket.send({ jsonrpc: '2.0', id, method, params: { ...params, _meta: modernEnvelope() } });
      const answer = await socket.next();
      expect(answer.id).toBe(id++);
      expectOneSentenceEach(answer.error, message);
    }
    await socket.close();
  });

  it('names a few of thousands of problems, in a short answer', async () => {
    const socket = await session2025();
    socket.send({ jsonrpc: '2.0', id: 1, method: 'prompts/get', params: { name: 'greet', arguments: manyWrongArguments() } });
    const text = await socket.nextText(10_000);
    expect(text.length).toBeLessThan(SMALL);
    const { error } = JSON.parse(text);
    expect(error.code).toBe(-32602);
    expect(error.message).toMatch(/^Invalid params: arguments\.k0 must be a string; .*; and 4990 more$/);
    await socket.close();
    expect((await modernRequest(gateway, TOKEN, 'prompts/get', { name: 'greet', arguments: manyWrongArguments() })).error?.message).toMatch(/; and 4990 more$/);
  });
});
