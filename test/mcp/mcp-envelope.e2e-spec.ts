import { ConnectionRegistry } from '../../src/core/ws/connection-registry';
import { AuthFailed, EnvelopeClient, JsonRpcError } from '../support/mcp-envelope-client';
import { RunningGateway, startGateway } from '../support/gateway';
import { freePort, listenOn } from '../support/ports';
import { TestSocket } from '../support/test-socket';

const TOKEN = 'mcp-secret';

/** A raw socket past `auth`, for sending frames a well-behaved client never would. */
async function authenticatedSocket(url: string): Promise<{ socket: TestSocket; sessionId: string }> {
  const socket = await TestSocket.open(url);
  socket.send({ type: 'auth', token: TOKEN, timestamp: Date.now() });
  const answer = await socket.next();
  expect(answer).toMatchObject({ type: 'auth', status: 'authenticated' });
  return { socket, sessionId: answer.sessionId };
}

const recent = () => expect.any(Number);

/** MCP WebSocket connections `gateway` still holds. */
const openMcpConnections = (gateway: RunningGateway) => gateway.app.get(ConnectionRegistry).count('mcp');

describe("MCP over WebSocket, the spec's envelope", () => {
  let gateway: RunningGateway;

  beforeAll(async () => {
    gateway = await startGateway({
      MCP_WS_AUTH_TOKEN: TOKEN,
      AUTH_TOKENS: 'shared-token',
      MCP_WS_MAX_CONNECTIONS: 20,
      CLOUD_MAX_MESSAGE_SIZE: 4096,
    });
  });
  afterAll(() => gateway.close());

  describe('a client written from the spec', () => {
    it('authenticates, initializes, lists and calls tools, and closes', async () => {
      const before = Date.now();
      const client = await EnvelopeClient.connect(gateway.ws('/mcp'), TOKEN);
      const auth = client.received[0];
      expect(auth).toEqual({
        type: 'auth',
        sessionId: expect.stringMatching(/^ws-session-[0-9a-f-]{36}$/),
        status: 'authenticated',
        serverInfo: { name: 'arcs-mini-mcp-server', version: expect.stringMatching(/^\d+\.\d+\.\d+/) },
        heartbeatInterval: 30000,
        timestamp: recent(),
      });
      expect(auth.timestamp).toBeGreaterThanOrEqual(before);
      expect(auth.timestamp).toBeLessThanOrEqual(Date.now());

      const initialized = await client.initialize('2025-11-25');
      expect(initialized).toMatchObject({
        protocolVersion: '2025-11-25',
        capabilities: { tools: { listChanged: true } },
        serverInfo: { name: 'arcs-mini-mcp-server' },
      });

      const { tools } = await client.request('tools/list');
      const byName = Object.fromEntries(tools.map((tool: any) => [tool.name, tool]));
      expect(Object.keys(byName)).toEqual(expect.arrayContaining(['calculator', 'get_current_time']));
      expect(byName.calculator).toEqual({
        name: 'calculator',
        title: 'Calculator',
        description: expect.stringMatching(/calculator/),
        inputSchema: expect.objectContaining({ type: 'object', required: ['a', 'b'] }),
        annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
      });
      expect(byName.get_current_time.outputSchema).toMatchObject({ type: 'object', required: expect.arrayContaining(['iso', 'timezone']) });

      expect(await client.request('tools/call', { name: 'calculator', arguments: { a: 2, b: 3 } })).toEqual({
        content: [{ type: 'text', text: '5' }],
      });
      const time = await client.request('tools/call', { name: 'get_current_time', arguments: { timezone: 'Asia/Shanghai' } });
      expect(time.structuredContent).toMatchObject({ timezone: 'Asia/Shanghai', utc_offset: '+08:00' });
      expect(JSON.parse(time.content[0].text)).toEqual(time.structuredContent);

      for (const frame of client.received.filter((f) => f.type === 'message')) {
        expect(frame).toEqual({ type: 'message', sessionId: client.sessionId, payload: expect.any(Object), timestamp: recent() });
      }

      const { answer, code } = await client.close();
      expect(answer).toEqual({ type: 'close', sessionId: client.sessionId, reason: expect.any(String), timestamp: recent() });
      expect(code).toBe(1000);
    });

    it('reports failed tools and bad arguments as isError results', async () => {
      const client = await EnvelopeClient.connect(gateway.ws('/mcp'), TOKEN);
      await client.initialize();
      expect(await client.request('tools/call', { name: 'calculator', arguments: { a: 1, b: 0, operation: 'divide' } })).toEqual({
        content: [{ type: 'text', text: 'Division by zero' }],
        isError: true,
      });
      const missing = await client.request('tools/call', { name: 'calculator', arguments: { a: 1 } });
      expect(missing).toMatchObject({ isError: true, content: [{ type: 'text', text: expect.stringMatching(/missing required argument "b"/) }] });
      const zone = await client.request('tools/call', { name: 'get_current_time', arguments: { timezone: 'Mars/Olympus' } });
      expect(zone).toMatchObject({ isError: true, content: [{ text: expect.stringMatching(/Unknown time zone "Mars\/Olympus"/) }] });
      await client.close();
    });

    it('answers JSON-RPC errors inside message envelopes: -32601, -32602', async () => {
      const client = await EnvelopeClient.connect(gateway.ws('/mcp'), TOKEN);
      await client.initialize();
      await expect(client.request('unknown/method')).rejects.toEqual(new JsonRpcError({ code: -32601, message: 'Method not found' }));
      await expect(client.request('tools/call', { name: 'no_such_tool', arguments: {} })).rejects.toMatchObject({
        error: { code: -32602, message: expect.stringMatching(/Unknown tool "no_such_tool"/) },
      });
      await expect(client.request('tools/call', { arguments: { a: 1 } })).rejects.toMatchObject({ error: { code: -32602 } });
      await expect(client.request('tools/call', { name: 'calculator', arguments: [1, 2] })).rejects.toMatchObject({ error: { code: -32602 } });
      const error = client.received.filter((f) => f.type === 'message').at(-1);
      expect(error).toMatchObject({ type: 'message', sessionId: client.sessionId, payload: { jsonrpc: '2.0', id: expect.any(Number) } });
      expect(await client.request('tools/call', { name: 'calculator', arguments: { a: 1, b: 1 } })).toEqual({ content: [{ type: 'text', text: '2' }] });
      await client.close();
    });

    it('answers the configured protocol version to a client asking for one it does not know', async () => {
      const client = await EnvelopeClient.connect(gateway.ws('/mcp'), TOKEN);
      expect((await client.initialize('2099-12-31')).protocolVersion).toBe('2024-11-05');
      await client.close();
    });

    it('accepts the shared AUTH_TOKENS as well as MCP_WS_AUTH_TOKEN', async () => {
      const client = await EnvelopeClient.connect(gateway.ws('/mcp'), 'shared-token');
      expect((await client.request('tools/list')).tools.length).toBeGreaterThan(0);
      await client.close();
    });

    it('releases the session when the connection ends', async () => {
      const client = await EnvelopeClient.connect(gateway.ws('/mcp'), TOKEN);
      expect(openMcpConnections(gateway)).toBeGreaterThan(0);
      await client.close();
      for (let waited = 0; openMcpConnections(gateway) > 0 && waited < 3000; waited += 20) await new Promise((resolve) => setTimeout(resolve, 20));
      expect(openMcpConnections(gateway)).toBe(0);
    });
  });

  describe('authentication', () => {
    it.each([
      ['a wrong token', { token: 'nope' }, 'Invalid authentication token'],
      ['no token', {}, 'Authentication requires a token'],
      ['a token that is not a string', { token: 12345 }, 'Authentication requires a token'],
    ])('answers %s with status "failed" and 401, then closes', async (_name, fields, message) => {
      const socket = await TestSocket.open(gateway.ws('/mcp'));
      socket.send({ type: 'auth', ...fields, clientInfo: { name: 'x', version: '1' }, timestamp: Date.now() });
      expect(await socket.next()).toEqual({ type: 'auth', status: 'failed', error: { code: 401, message }, timestamp: recent() });
      expect(await socket.closed).toEqual({ code: 4401, reason: 'Authentication failed' });
    });

    it('rejects with the failure in the spec client', async () => {
      await expect(EnvelopeClient.connect(gateway.ws('/mcp'), 'nope')).rejects.toBeInstanceOf(AuthFailed);
    });

    it.each([
      ['a message', { type: 'message', payload: { jsonrpc: '2.0', id: 1, method: 'tools/list' } }],
      ['a pong', { type: 'pong' }],
      ['a close', { type: 'close' }],
      ['text that is not JSON', '{"type": "auth",'],
      ['an unknown type', { type: 'subscribe' }],
      ['a frame without type', { token: TOKEN }],
    ])('answers %s before auth with error 401 and closes', async (_name, frame) => {
      const socket = await TestSocket.open(gateway.ws('/mcp'));
      socket.send(frame);
      expect(await socket.next()).toEqual({ type: 'error', error: { code: 401, message: 'Not authenticated', data: null }, timestamp: recent() });
      expect((await socket.closed).code).toBe(4401);
    });

    it('answers a second auth with 400 and keeps the session', async () => {
      const { socket, sessionId } = await authenticatedSocket(gateway.ws('/mcp'));
      socket.send({ type: 'auth', token: TOKEN });
      expect(await socket.next()).toMatchObject({ type: 'error', sessionId, error: { code: 400, message: 'Already authenticated' } });
      socket.send({ type: 'message', payload: { jsonrpc: '2.0', id: 9, method: 'ping' } });
      expect(await socket.next()).toMatchObject({ type: 'message', payload: { id: 9, result: {} } });
      await socket.close();
    });
  });

  describe('bad envelopes are answered and the session stays usable', () => {
    let socket: TestSocket;
    let sessionId: string;

    beforeEach(async () => {
      ({ socket, sessionId } = await authenticatedSocket(gateway.ws('/mcp')));
    });
    afterEach(() => socket.close());

    const stillUsable = async () => {
      socket.send({
        type: 'message',
        sessionId,
        payload: { jsonrpc: '2.0', id: 'check', method: 'tools/call', params: { name: 'calculator', arguments: { a: 20, b: 22 } } },
      });
      expect(await socket.next()).toMatchObject({ type: 'message', payload: { id: 'check', result: { content: [{ text: '42' }] } } });
    };

    it.each([
      ['text that is not JSON', -32700, '{"type": "message", "payload": {', 'Parse error', /Invalid JSON/],
      ['a JSON array', -32600, '[{"type": "message"}]', 'Invalid Request', /JSON object with a string "type"/],
      ['a frame without type', -32600, { payload: {} }, 'Invalid Request', /JSON object with a string "type"/],
      ['a type that is not a string', -32600, { type: 7 }, 'Invalid Request', /JSON object with a string "type"/],
      ['an unknown type', -32600, { type: 'subscribe' }, 'Invalid Request', /unknown envelope type "subscribe": a client sends auth, message, pong, close/],
      ['a ping from the client', -32600, { type: 'ping' }, 'Invalid Request', /unknown envelope type "ping"/],
      ['a message without payload', -32600, { type: 'message' }, 'Invalid Request', /payload must be a JSON-RPC 2\.0 message object/],
      ['a payload that is an array', -32600, { type: 'message', payload: [1] }, 'Invalid Request', /payload must be a JSON-RPC 2\.0 message object/],
      [
        'a payload that is not JSON-RPC',
        -32600,
        { type: 'message', payload: { method: 'tools/list' } },
        'Invalid Request',
        /payload is not a JSON-RPC 2\.0 request/,
      ],
      ['a timestamp that is not a number', -32600, { type: 'pong', timestamp: 'now' }, 'Invalid Request', /timestamp must be a number/],
      ['a sessionId that is not a string', -32600, { type: 'pong', sessionId: 5 }, 'Invalid Request', /sessionId must be a string/],
    ])('%s -> error %d', async (_name, code, frame, message, data) => {
      socket.send(frame);
      const answer = await socket.next();
      expect(answer).toEqual({ type: 'error', sessionId, error: { code, message, data: expect.stringMatching(data) }, timestamp: recent() });
      await stillUsable();
    });

    it('answers a sessionId of another session with 403', async () => {
      socket.send({ type: 'message', sessionId: 'ws-session-someone-else', payload: { jsonrpc: '2.0', id: 1, method: 'tools/list' } });
      expect(await socket.next()).toMatchObject({
        type: 'error',
        sessionId,
        error: { code: 403, message: 'Session does not belong to this connection', data: expect.stringMatching(/ws-session-someone-else/) },
      });
      await stillUsable();
    });

    it('answers a frame over the size limit with 400', async () => {
      socket.send({ type: 'message', sessionId, payload: { jsonrpc: '2.0', id: 1, method: 'x', pad: 'x'.repeat(5000) } });
      expect(await socket.next()).toMatchObject({ type: 'error', sessionId, error: { code: 400, message: expect.stringMatching(/over the 4096-byte limit/) } });
      await stillUsable();
    });

    it('gives no answer to a JSON-RPC notification, known or not', async () => {
      socket.send({ type: 'message', sessionId, payload: { jsonrpc: '2.0', method: 'notifications/whatever' } });
      await socket.expectSilence();
      await stillUsable();
    });
  });
});

describe('MCP over WebSocket, timing (short intervals set by env)', () => {
  let gateway: RunningGateway;

  beforeAll(async () => {
    gateway = await startGateway({
      MCP_WS_AUTH_TOKEN: TOKEN,
      MCP_WS_MAX_CONNECTIONS: 10,
      MCP_WS_AUTH_TIMEOUT: 600,
      MCP_WS_HEARTBEAT_INTERVAL: 100,
      MCP_WS_HEARTBEAT_TIMEOUT: 1000,
    });
  });
  afterAll(() => gateway.close());

  it('closes a connection that does not authenticate in time with 408', async () => {
    const socket = await TestSocket.open(gateway.ws('/mcp'));
    const opened = Date.now();
    expect(await socket.next(3000)).toEqual({
      type: 'error',
      error: { code: 408, message: 'Authentication timeout: no auth message within 600 ms', data: null },
      timestamp: recent(),
    });
    expect(Date.now() - opened).toBeGreaterThanOrEqual(550);
    expect(await socket.closed).toEqual({ code: 4408, reason: 'Authentication timeout' });
  });

  it('pings every heartbeatInterval and keeps a client that answers pong', async () => {
    const client = await EnvelopeClient.connect(gateway.ws('/mcp'), TOKEN);
    expect(client.received[0].heartbeatInterval).toBe(100);
    await new Promise((resolve) => setTimeout(resolve, 2500));
    const pings = client.received.filter((frame) => frame.type === 'ping');
    expect(pings.length).toBeGreaterThanOrEqual(5);
    expect(pings[0]).toEqual({ type: 'ping', sessionId: client.sessionId, timestamp: recent() });
    expect(await client.request('tools/list')).toMatchObject({ tools: expect.any(Array) });
    expect((await client.close()).code).toBe(1000);
  });

  it('ends the session of a client that stops answering pong', async () => {
    const client = await EnvelopeClient.connect(gateway.ws('/mcp'), TOKEN, { answerPings: false });
    const goodbye = await client.nextOfType('close', 3000);
    expect(goodbye).toEqual({ type: 'close', sessionId: client.sessionId, reason: 'Heartbeat timeout: no pong within 1000 ms', timestamp: recent() });
    expect(await client.closed).toEqual({ code: 4408, reason: 'Heartbeat timeout' });
    for (let waited = 0; openMcpConnections(gateway) > 0 && waited < 3000; waited += 20) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(openMcpConnections(gateway)).toBe(0);
  });

  it('keeps a plain MCP client, which answers WebSocket pings by itself', async () => {
    const socket = await TestSocket.open(gateway.ws(`/mcp?token=${TOKEN}`), { protocols: ['mcp'] });
    let pings = 0;
    socket.socket.on('ping', () => (pings += 1));
    await new Promise((resolve) => setTimeout(resolve, 2500));
    expect(pings).toBeGreaterThanOrEqual(5);
    socket.send({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    expect(await socket.next()).toMatchObject({ id: 1, result: { tools: expect.any(Array) } });
    await socket.close();
  });

  it('drops a plain MCP client that does not answer WebSocket pings, and its session', async () => {
    const socket = await TestSocket.open(gateway.ws(`/mcp?token=${TOKEN}`), { protocols: ['mcp'], autoPong: false });
    expect((await socket.closed).code).toBe(1006);
    for (let waited = 0; openMcpConnections(gateway) > 0 && waited < 3000; waited += 20) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(openMcpConnections(gateway)).toBe(0);
  });

  it('starts the heartbeat at auth, not at connect', async () => {
    const socket = await TestSocket.open(gateway.ws('/mcp'));
    await new Promise((resolve) => setTimeout(resolve, 250));
    socket.send({ type: 'auth', token: TOKEN });
    expect(await socket.next()).toMatchObject({ status: 'authenticated' });
    expect(await socket.next()).toMatchObject({ type: 'ping' });
    await socket.close();
  });
});

describe('MCP over WebSocket, connections and shutdown', () => {
  it('refuses connections over MCP_WS_MAX_CONNECTIONS: plain ones with 429 at the upgrade, envelope ones when they authenticate', async () => {
    const gateway = await startGateway({ MCP_WS_AUTH_TOKEN: TOKEN, MCP_WS_MAX_CONNECTIONS: 1 });
    try {
      // A socket that has not authenticated takes no place: a real client still gets in.
      const stranger = await TestSocket.open(gateway.ws('/mcp'));
      const first = await EnvelopeClient.connect(gateway.ws('/mcp'), TOKEN);
      const late = await TestSocket.open(gateway.ws('/mcp'));
      late.send({ type: 'auth', token: TOKEN });
      expect(await late.next()).toMatchObject({
        type: 'auth',
        status: 'failed',
        error: { message: expect.stringMatching(/at most 1 \(MCP_WS_MAX_CONNECTIONS\)/) },
      });
      expect(await late.closed).toEqual({ code: 1013, reason: 'Too many connections' });
      await stranger.close();
      await expect(TestSocket.open(gateway.ws(`/mcp?token=${TOKEN}`), { protocols: ['mcp'] })).rejects.toMatchObject({ status: 429 });
      await first.close();
      const next = await EnvelopeClient.connect(gateway.ws('/mcp'), TOKEN);
      await next.close();
    } finally {
      await gateway.close();
    }
  });

  it('says close to connected clients when the server shuts down, and they answer it', async () => {
    const gateway = await startGateway({ MCP_WS_AUTH_TOKEN: TOKEN, MCP_WS_MAX_CONNECTIONS: 5 });
    const client = await EnvelopeClient.connect(gateway.ws('/mcp'), TOKEN);
    const goodbye = client.nextOfType('close');
    const stopped = gateway.close();
    expect(await goodbye).toEqual({ type: 'close', sessionId: client.sessionId, reason: 'Server shutting down', timestamp: recent() });
    expect((await client.closed).code).toBe(1000);
    await stopped;
  });
});

describe('MCP over WebSocket, the dedicated listener (MCP_WS_HOST:MCP_WS_PORT)', () => {
  let gateway: RunningGateway;
  let port: number;

  beforeAll(async () => {
    port = await freePort();
    gateway = await startGateway({ MCP_WS_AUTH_TOKEN: TOKEN, MCP_WS_PORT: port, MCP_WS_MAX_CONNECTIONS: 1 });
  });
  afterAll(() => gateway.close());

  it.each([
    ['/', `ws://127.0.0.1:PORT`],
    ['/mcp', `ws://127.0.0.1:PORT/mcp`],
  ])('serves the envelope at %s', async (_path, url) => {
    const client = await EnvelopeClient.connect(url.replace('PORT', String(port)), TOKEN);
    await client.initialize();
    expect((await client.request('tools/call', { name: 'calculator', arguments: { a: 6, b: 7, operation: 'multiply' } })).content).toEqual([
      { type: 'text', text: '42' },
    ]);
    await client.close();
  });

  it('shares the connection limit with /mcp on the main port', async () => {
    const client = await EnvelopeClient.connect(`ws://127.0.0.1:${port}`, TOKEN);
    await expect(TestSocket.open(gateway.ws(`/mcp?token=${TOKEN}`), { protocols: ['mcp'] })).rejects.toMatchObject({ status: 429 });
    await client.close();
  });

  it('refuses other paths with 404 and plain HTTP with 426', async () => {
    await expect(TestSocket.open(`ws://127.0.0.1:${port}/litemcp/calculator`)).rejects.toMatchObject({ status: 404 });
    const response = await fetch(`http://127.0.0.1:${port}/mcp`);
    expect(response.status).toBe(426);
    expect(((await response.json()) as any).error.message).toMatch(/MCP over WebSocket only/);
  });

  it('holds its port while running, lets it go when the gateway stops', async () => {
    const otherPort = await freePort();
    const other = await startGateway({ MCP_WS_AUTH_TOKEN: TOKEN, MCP_WS_PORT: otherPort });
    await expect(listenOn(otherPort)).rejects.toMatchObject({ code: 'EADDRINUSE' });
    await other.close();
    await listenOn(otherPort);
  });

  it('fails to start, naming MCP_WS_PORT, when its port is taken', async () => {
    await expect(startGateway({ MCP_WS_AUTH_TOKEN: TOKEN, MCP_WS_PORT: port })).rejects.toThrow(
      new RegExp(`MCP_WS_PORT: cannot listen on 127\\.0\\.0\\.1:${port} \\(.*EADDRINUSE`),
    );
  });
});
