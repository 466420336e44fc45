import { RunningGateway, startGateway } from '../support/gateway';
import { bearer, inSession, initializeOn, mcpHttp } from '../support/mcp-http';
import { TestSocket } from '../support/test-socket';

const TOKEN = 'probe-ids-token';

/**
 * JSON-RPC ids a JavaScript number cannot hold as the client wrote them: above 2^53 (rounded on
 * parsing, so echoing one would name another request) and past a double's range (`1e400` parses
 * as Infinity). Each is written as raw JSON text, since `JSON.stringify` could not write it.
 */
const UNREPRESENTABLE_IDS = ['9007199254740993', '-9007199254740993', '123456789012345678901234567890', '1e400', '-1e400'];

const request = (id: string, method = 'tools/list') => `{"jsonrpc":"2.0","id":${id},"method":"${method}"}`;

/** Says why, and what to send instead. */
const WHY = /id is a number past 2\^53 - 1, which cannot be read exactly \(send a string or a smaller integer\)/;

/**
 * Requests with ids that cannot be represented, on every MCP transport: each is answered
 * -32600 with `id: null` (JSON-RPC 2.0, section 5: the id could not be read), never silence, and
 * the connection serves the next request.
 */
describe('probing: JSON-RPC ids that cannot be represented', () => {
  let gateway: RunningGateway;

  beforeAll(async () => {
    gateway = await startGateway({ MCP_WS_AUTH_TOKEN: TOKEN });
  });
  afterAll(() => gateway.close());

  it('plain MCP answers each with -32600 and id null, then serves the next request', async () => {
    const socket = await TestSocket.open(gateway.ws('/mcp'), { headers: bearer(TOKEN), protocols: ['mcp'] });
    for (const id of UNREPRESENTABLE_IDS) {
      socket.send(request(id));
      expect(await socket.next()).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Invalid Request', data: expect.stringMatching(WHY) } });
      socket.send(request('7', 'ping'));
      expect(await socket.next()).toEqual({ jsonrpc: '2.0', id: 7, result: {} });
    }
    await socket.close();
  });

  it('the envelope answers each with an error envelope of -32600, then serves the next message', async () => {
    const socket = await TestSocket.open(gateway.ws('/mcp'));
    socket.send({ type: 'auth', token: TOKEN });
    const { sessionId } = await socket.next();
    for (const id of UNREPRESENTABLE_IDS) {
      socket.send(`{"type":"message","sessionId":"${sessionId}","payload":${request(id)}}`);
      expect(await socket.next()).toMatchObject({
        type: 'error',
        sessionId,
        error: { code: -32600, message: 'Invalid Request', data: expect.stringMatching(WHY) },
      });
      socket.send({ type: 'message', sessionId, payload: { jsonrpc: '2.0', id: 7, method: 'ping' } });
      expect(await socket.next()).toMatchObject({ type: 'message', payload: { jsonrpc: '2.0', id: 7, result: {} } });
    }
    await socket.close();
  });

  it('Streamable HTTP answers each with 400, -32600 and id null, then serves the next request', async () => {
    const { sessionId } = await initializeOn(gateway, TOKEN);
    const headers = { ...bearer(TOKEN), ...inSession(sessionId!) };
    for (const id of UNREPRESENTABLE_IDS) {
      const answer = await mcpHttp(gateway, { body: request(id), headers });
      expect(answer.status).toBe(400);
      expect(answer.json()).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32600, message: expect.stringMatching(WHY) } });
      const ping = await mcpHttp(gateway, { body: request('7', 'ping'), headers });
      expect(ping.status).toBe(200);
    }
  });
});
