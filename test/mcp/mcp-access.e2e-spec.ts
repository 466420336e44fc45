import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpHttpSessions } from '../../src/mcp/transports/http/mcp-http-sessions.service';
import { LiteMcpClient } from '../support/litemcp-client';
import { listeningPort, startMain } from '../support/main-process';
import { AuthFailed, EnvelopeClient } from '../support/mcp-envelope-client';
import { mcpHttp } from '../support/mcp-http';
import { RunningGateway, startGateway } from '../support/gateway';
import { freePort, listenOn } from '../support/ports';
import { TestSocket, UpgradeRefused } from '../support/test-socket';

const TOKEN = 'mcp-secret';
const SHARED = 'shared-token';
const INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};

const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });
const plain = (token?: string) => ({ protocols: ['mcp'], headers: token ? bearer(token) : {} });

async function until(condition: () => boolean, timeoutMs = 3000): Promise<void> {
  for (let waited = 0; !condition() && waited < timeoutMs; waited += 20) await new Promise((resolve) => setTimeout(resolve, 20));
  expect(condition()).toBe(true);
}

describe('MCP auth and errors on every route', () => {
  let gateway: RunningGateway;

  beforeAll(async () => {
    gateway = await startGateway({
      MCP_WS_AUTH_TOKEN: TOKEN,
      AUTH_TOKENS: SHARED,
      MCP_WS_MAX_CONNECTIONS: 10,
      CLOUD_MAX_MESSAGE_SIZE: 2048,
      CLOUD_SESSION_TIMEOUT: 0.5,
    });
  });
  afterAll(() => gateway.close());

  describe('plain MCP over WebSocket', () => {
    it('refuses an upgrade without a token with 401 and a wrong one with 403', async () => {
      const refusal = (await TestSocket.open(gateway.ws('/mcp'), plain()).catch((error) => error)) as UpgradeRefused;
      expect(refusal).toBeInstanceOf(UpgradeRefused);
      expect(refusal.status).toBe(401);
      expect(refusal.headers['www-authenticate']).toBe('Bearer');
      await expect(TestSocket.open(gateway.ws('/mcp'), plain('nope'))).rejects.toMatchObject({ status: 403 });
      await expect(TestSocket.open(gateway.ws('/mcp?token=nope'), plain())).rejects.toMatchObject({ status: 403 });
    });

    it.each([
      ['MCP_WS_AUTH_TOKEN in Authorization', '/mcp', TOKEN],
      ['an AUTH_TOKENS token in ?token=', `/mcp?token=${SHARED}`, undefined],
    ])('accepts %s', async (_name, path, token) => {
      const socket = await TestSocket.open(gateway.ws(path), plain(token));
      expect(socket.socket.protocol).toBe('mcp');
      socket.send(INITIALIZE);
      expect(await socket.next()).toMatchObject({ jsonrpc: '2.0', id: 1, result: { protocolVersion: '2025-06-18' } });
      await socket.close();
    });

    describe('frames that are not JSON-RPC messages get JSON-RPC errors, and the connection stays usable', () => {
      let socket: TestSocket;

      beforeEach(async () => {
        socket = await TestSocket.open(gateway.ws('/mcp'), plain(TOKEN));
      });
      afterEach(() => socket.close());

      it.each([
        ['text that is not JSON', '{"jsonrpc": "2.0",', null, -32700, 'Parse error', /Invalid JSON/],
        ['a JSON array', '[1, 2]', null, -32600, 'Invalid Request', /not a JSON-RPC 2\.0/],
        ['a request whose method is not a string', { jsonrpc: '2.0', id: 7, method: 5 }, 7, -32600, 'Invalid Request', /not a JSON-RPC 2\.0/],
        ['an envelope, which plain MCP does not speak', { type: 'auth', token: TOKEN }, null, -32600, 'Invalid Request', /not a JSON-RPC 2\.0/],
        [
          'a message over the size limit',
          { jsonrpc: '2.0', id: 8, method: 'ping', params: { pad: 'x'.repeat(3000) } },
          null,
          -32600,
          'Invalid Request',
          /over the 2048-byte limit/,
        ],
      ])('%s', async (_name, frame, id, code, message, data) => {
        socket.send(frame);
        expect(await socket.next()).toEqual({ jsonrpc: '2.0', id, error: { code, message, data: expect.stringMatching(data) } });
        socket.send({ jsonrpc: '2.0', id: 'after', method: 'tools/list' });
        expect(await socket.next()).toMatchObject({ id: 'after', result: { tools: expect.any(Array) } });
      });

      it('answers an unknown method with -32601', async () => {
        socket.send({ jsonrpc: '2.0', id: 3, method: 'unknown/method' });
        expect(await socket.next()).toEqual({ jsonrpc: '2.0', id: 3, error: { code: -32601, message: 'Method not found' } });
      });
    });
  });

  describe('Streamable HTTP', () => {
    it.each(['POST', 'GET', 'DELETE'])('%s without a token is 401, with a wrong one 403, as JSON-RPC errors', async (method) => {
      const body = method === 'POST' ? INITIALIZE : undefined;
      const missing = await mcpHttp(gateway, { method, body });
      expect(missing.status).toBe(401);
      expect(missing.headers.get('www-authenticate')).toBe('Bearer');
      expect(missing.json()).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32000, message: expect.stringMatching(/Authentication required/) } });
      const wrong = await mcpHttp(gateway, { method, body, headers: bearer('nope') });
      expect(wrong.status).toBe(403);
      expect(wrong.json()).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32000, message: 'Invalid token' } });
    });

    it.each([
      ['a body that is not JSON', { body: '{"jsonrpc": ' }, 400, -32700, /^Parse error: /],
      ['a body over the size limit', { body: { ...INITIALIZE, pad: 'x'.repeat(3000) } }, 413, -32600, /over the 2048-byte limit/],
      ['a POST without session that is not initialize', { body: { jsonrpc: '2.0', id: 2, method: 'tools/list' } }, 400, -32000, /no Mcp-Session-Id/],
      ['a GET without session', { method: 'GET' }, 400, -32000, /no Mcp-Session-Id/],
      [
        'an unknown session',
        { body: { jsonrpc: '2.0', id: 2, method: 'tools/list' }, headers: { 'Mcp-Session-Id': 'no-such-session' } },
        404,
        -32001,
        /Session not found/,
      ],
      ['a method Streamable HTTP does not use', { method: 'PUT', body: INITIALIZE }, 405, -32000, /Method not allowed/],
    ])('answers %s with %d and a JSON-RPC error', async (_name, init, status, code, message) => {
      const response = await mcpHttp(gateway, { ...init, headers: { ...bearer(TOKEN), ...(init as { headers?: Record<string, string> }).headers } });
      expect(response.status).toBe(status);
      expect(response.json()).toEqual({ jsonrpc: '2.0', id: null, error: { code, message: expect.stringMatching(message) } });
    });

    it('tells the methods it allows', async () => {
      expect((await mcpHttp(gateway, { method: 'PUT', headers: bearer(TOKEN) })).headers.get('allow')).toBe('GET, POST, DELETE');
    });

    it('keeps a session to the token that started it', async () => {
      const started = await mcpHttp(gateway, { body: INITIALIZE, headers: bearer(TOKEN) });
      expect(started.status).toBe(200);
      const sessionId = started.headers.get('mcp-session-id')!;
      const list = { jsonrpc: '2.0', id: 2, method: 'tools/list' };
      const version = { 'Mcp-Protocol-Version': '2025-06-18', 'Mcp-Session-Id': sessionId };
      expect((await mcpHttp(gateway, { body: list, headers: { ...bearer(SHARED), ...version } })).status).toBe(404);
      const own = await mcpHttp(gateway, { body: list, headers: { ...bearer(TOKEN), ...version } });
      expect(own.status).toBe(200);
      expect(own.text).toMatch(/"tools":\[/);
    });

    it('ends a session idle for CLOUD_SESSION_TIMEOUT, but not one whose client holds its stream open', async () => {
      const sessions = gateway.app.get(McpHttpSessions);
      await until(() => sessions.size === 0); // the sessions of earlier tests expire first
      const client = new Client({ name: 'sdk', version: '1' });
      await client.connect(new StreamableHTTPClientTransport(new URL(gateway.http('/mcp')), { requestInit: { headers: bearer(TOKEN) } }));
      const idle = await mcpHttp(gateway, { body: INITIALIZE, headers: bearer(TOKEN) });
      const idleId = idle.headers.get('mcp-session-id')!;
      expect(sessions.size).toBe(2);
      await until(() => sessions.size === 1);
      const expired = await mcpHttp(gateway, {
        body: { jsonrpc: '2.0', id: 2, method: 'tools/list' },
        headers: { ...bearer(TOKEN), 'Mcp-Session-Id': idleId, 'Mcp-Protocol-Version': '2025-06-18' },
      });
      expect(expired.status).toBe(404);
      await new Promise((resolve) => setTimeout(resolve, 1000));
      expect((await client.listTools()).tools.length).toBeGreaterThan(0);
      await client.close();
    });
  });

  it('keeps MCP_WS_AUTH_TOKEN to MCP: the shared routes do not take it', async () => {
    await expect(LiteMcpClient.connect(gateway.ws('/litemcp/calculator'), TOKEN)).rejects.toThrow(/403/);
    const client = await LiteMcpClient.connect(gateway.ws('/litemcp/calculator'), SHARED);
    client.close();
  });
});

describe('MCP with no token configured anywhere', () => {
  let gateway: RunningGateway;

  beforeAll(async () => {
    gateway = await startGateway({ MCP_WS_MAX_CONNECTIONS: 10 });
  });
  afterAll(() => gateway.close());

  it('is not open on any route, while the shared routes are', async () => {
    await expect(TestSocket.open(gateway.ws('/mcp'), plain())).rejects.toMatchObject({ status: 401 });
    await expect(TestSocket.open(gateway.ws('/mcp'), plain('guess'))).rejects.toMatchObject({ status: 403 });
    await expect(EnvelopeClient.connect(gateway.ws('/mcp'), 'guess')).rejects.toBeInstanceOf(AuthFailed);
    expect((await mcpHttp(gateway, { body: INITIALIZE })).status).toBe(401);
    const litemcp = await LiteMcpClient.connect(gateway.ws('/litemcp/calculator'));
    expect((await litemcp.call('calculator', ['1', '2'])).response.error).toBe(false);
    litemcp.close();
  });
});

describe('MCP_ENABLED=false', () => {
  let gateway: RunningGateway;
  let dedicatedPort: number;

  beforeAll(async () => {
    dedicatedPort = await freePort();
    gateway = await startGateway({ MCP_ENABLED: false, MCP_WS_AUTH_TOKEN: TOKEN, MCP_WS_PORT: dedicatedPort });
  });
  afterAll(() => gateway.close());

  it('answers 404 at every MCP upgrade, before any auth', async () => {
    for (const options of [{}, plain(TOKEN), plain()]) {
      const refusal = (await TestSocket.open(gateway.ws('/mcp'), options).catch((error) => error)) as UpgradeRefused;
      expect(refusal.status).toBe(404);
      expect(JSON.parse(refusal.body).error.message).toMatch(/MCP is turned off/);
    }
  });

  it.each(['POST', 'GET', 'DELETE'])('answers 404 to Streamable HTTP %s', async (method) => {
    const response = await mcpHttp(gateway, { method, body: method === 'POST' ? INITIALIZE : undefined, headers: bearer(TOKEN) });
    expect(response.status).toBe(404);
    expect(response.json()).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32000, message: expect.stringMatching(/MCP is turned off/) } });
  });

  it('opens no dedicated listener, and leaves the other protocols alone', async () => {
    await listenOn(dedicatedPort);
    const litemcp = await LiteMcpClient.connect(gateway.ws('/litemcp/calculator'));
    expect((await litemcp.call('calculator', ['2', '2'])).response.content[0].data).toBe('4');
    litemcp.close();
  });
});

describe('the gateway process and MCP', () => {
  it('starts with the dedicated listener on, generates an MCP token when none is set, logs it once, and accepts it', async () => {
    const dedicatedPort = await freePort();
    const main = startMain({ MCP_WS_PORT: String(dedicatedPort), AUTH_TOKENS: '', MCP_WS_AUTH_TOKEN: '' });
    try {
      const port = await listeningPort(main.output);
      const tokens = [...main.output().matchAll(/generated for this run: (\S+?)"/g)].map((match) => match[1]);
      expect(tokens).toHaveLength(1);
      expect(tokens[0]).toMatch(/^[A-Za-z0-9_-]{32}$/);
      const line = main
        .output()
        .split('\n')
        .find((text) => text.includes('generated for this run'))!;
      expect(JSON.parse(line)).toMatchObject({ level: 'warn', context: 'MCP' });
      expect(main.output()).toContain(`MCP over WebSocket also on ws://127.0.0.1:${dedicatedPort}/`);

      const envelope = await EnvelopeClient.connect(`ws://127.0.0.1:${dedicatedPort}`, tokens[0]);
      expect((await envelope.request('tools/list')).tools.length).toBeGreaterThan(0);
      await envelope.close();
      const client = new Client({ name: 'sdk', version: '1' });
      await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`), { requestInit: { headers: bearer(tokens[0]) } }));
      expect((await client.callTool({ name: 'calculator', arguments: { a: 1, b: 2 } })).content).toEqual([{ type: 'text', text: '3' }]);
      await client.close();
    } finally {
      main.child.kill('SIGTERM');
    }
    expect(await main.exited).toBe(0);
    await listenOn(dedicatedPort);
  }, 30000);

  it("refuses to start with the spec's placeholder token unless it is allowed", async () => {
    const refused = startMain({ MCP_WS_AUTH_TOKEN: 'ChangeMe!' });
    expect(await refused.exited).toBe(1);
    expect(refused.output()).toMatch(/Invalid configuration/);
    expect(refused.output()).toMatch(/MCP_WS_AUTH_TOKEN is the spec's placeholder "ChangeMe!"/);

    const allowed = startMain({ MCP_WS_AUTH_TOKEN: 'ChangeMe!', MCP_WS_ALLOW_DEFAULT_TOKEN: 'true' });
    await listeningPort(allowed.output);
    expect(allowed.output()).toMatch(/placeholder \\"ChangeMe!\\" \(MCP_WS_ALLOW_DEFAULT_TOKEN=true\)/);
    expect(allowed.output()).not.toMatch(/generated for this run/);
    allowed.child.kill('SIGTERM');
    expect(await allowed.exited).toBe(0);
  }, 30000);
});
