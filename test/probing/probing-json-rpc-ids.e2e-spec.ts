import { RunningGateway, startGateway } from '../support/gateway';
import { bearer, inSession, initializeOn, mcpHttp, modernEnvelope } from '../support/mcp-http';
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

/**
 * The same ids, and a fraction and -0, on the protocols whose requests are not JSON-RPC: each
 * frame gets an answer, sent twice (read as one number, Infinity or 2^53, the second could be
 * taken for a repeat of the first and ignored).
 */
describe('probing: ids a JSON number cannot hold exactly, on the other protocols', () => {
  const IDS = [...UNREPRESENTABLE_IDS, '1.5', '-0'];
  let gateway: RunningGateway;

  beforeAll(async () => {
    gateway = await startGateway({ MCP_WS_AUTH_TOKEN: TOKEN });
  });
  afterAll(() => gateway.close());

  /** Sends each frame twice and reads an answer to each: silence fails the test. */
  async function everyFrameAnswered(socket: TestSocket, frames: string[]): Promise<any[]> {
    const answers: any[] = [];
    for (const frame of frames) {
      for (let attempt = 0; attempt < 2; attempt += 1) {
        socket.send(frame);
        answers.push(JSON.parse(await socket.nextText(2000)));
      }
    }
    return answers;
  }

  it('LiteMCP answers every get and call with an error frame and id null; -0 is the id 0', async () => {
    const socket = await TestSocket.open(gateway.ws('/litemcp/calculator'));
    for (const id of IDS.filter((id) => id !== '-0')) {
      const frames = [
        `{"version":[1,0,0],"id":${id},"type":"get"}`,
        `{"version":[1,0,0],"id":${id},"type":"call","data":{"tool":"calculator","arguments":["1","2"]}}`,
      ];
      for (const answer of await everyFrameAnswered(socket, frames))
        expect(answer).toMatchObject({ id: null, type: 'error', data: { code: 'INVALID_MESSAGE' } });
    }
    // A repeated id is ignored (the spec's rule): -0 once.
    socket.send('{"version":[1,0,0],"id":-0,"type":"get"}');
    expect(await socket.next()).toMatchObject({ id: 0, type: 'info' });
    await socket.close();
  });

  it('UTCP 0.1 answers every call and discover', async () => {
    const socket = await TestSocket.open(gateway.ws('/utcp'));
    for (const id of IDS) {
      const answers = await everyFrameAnswered(socket, [
        `{"type":"call","id":${id},"tool":"calculator","params":{"a":1,"b":2}}`,
        `{"type":"discover","id":${id}}`,
      ]);
      expect(answers.map((answer) => answer.type)).toEqual(['result', 'result', 'discovery_response', 'discovery_response']);
    }
    await socket.close();
  });

  it('the LLM gateway answers every text_input whose turn_id is such a number with an error', async () => {
    const socket = await TestSocket.open(gateway.ws('/'));
    expect(await socket.next()).toMatchObject({ type: 'status', status: 'connected' });
    for (const id of IDS) {
      for (const answer of await everyFrameAnswered(socket, [`{"type":"text_input","turn_id":${id},"text":"hi"}`])) {
        expect(answer).toMatchObject({ type: 'error', code: 'INVALID_MESSAGE' });
      }
    }
    await socket.close();
  });

  it('MCP 2026-07-28 over a WebSocket answers every request', async () => {
    const socket = await TestSocket.open(gateway.ws(`/mcp?token=${TOKEN}`), { protocols: ['mcp'] });
    const meta = JSON.stringify(modernEnvelope());
    for (const id of IDS) {
      const answers = await everyFrameAnswered(socket, [`{"jsonrpc":"2.0","id":${id},"method":"tools/list","params":{"_meta":${meta}}}`]);
      for (const answer of answers) expect(id === '-0' ? answer.result : answer.error).toBeDefined();
    }
    await socket.close();
  });
});
