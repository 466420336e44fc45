import type { Socket } from 'net';
import { RunningGateway, startGateway } from '../support/gateway';
import { eventually } from '../support/probing';
import { openTcp, streamHugeFrame, upgradeRaw } from '../support/raw-websocket';
import { TestSocket } from '../support/test-socket';

const TOKEN = 'probe-token';
const MCP_TOKEN = 'probe-mcp-token';

describe('Probing: what a client without a token can make the gateway hold', () => {
  describe('WebSocket routes that authenticate by message', () => {
    let gateway: RunningGateway;
    const serverSockets: Socket[] = [];

    beforeAll(async () => {
      gateway = await startGateway({ AUTH_TOKENS: TOKEN, MCP_WS_AUTH_TOKEN: MCP_TOKEN, WS_UNAUTHENTICATED_MAX_BYTES: 65536, WS_MAX_UNAUTHENTICATED: 100 });
      gateway.app.getHttpServer().on('connection', (socket: Socket) => serverSockets.push(socket));
    });
    afterAll(() => gateway.close());

    it('reads at most WS_UNAUTHENTICATED_MAX_BYTES of each of 20 sockets streaming unfinished 8 MB frames to /utcp and /mcp, and closes each', async () => {
      serverSockets.length = 0;
      const sockets = await Promise.all(Array.from({ length: 20 }, (_, index) => upgradeRaw(gateway.port, index % 2 === 0 ? '/utcp' : '/mcp')));
      const before = process.memoryUsage().arrayBuffers;
      let peak = before;
      const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().arrayBuffers)), 10);
      await Promise.all(sockets.map((socket) => streamHugeFrame(socket, 8 * 1024 * 1024)));
      clearInterval(sampler);
      await eventually(() => serverSockets.every((socket) => socket.destroyed), 'every server-side socket closed');
      // The upgrade request, the bound, and at most one read of the network past it.
      for (const socket of serverSockets) expect(socket.bytesRead).toBeLessThan(65536 + 2 * 65536 + 1024);
      expect(peak - before).toBeLessThan(40 * 1024 * 1024);
    });

    it('tells a well-behaved client why it was closed (1009), and lifts the bound once it has authenticated', async () => {
      const early = await TestSocket.open(gateway.ws('/utcp'));
      early.send('x'.repeat(100_000));
      expect(await early.closed).toEqual({ code: 1009, reason: 'Over 65536 bytes sent before authenticating (WS_UNAUTHENTICATED_MAX_BYTES)' });

      const client = await TestSocket.open(gateway.ws('/utcp'));
      client.send({ type: 'auth', token: TOKEN, id: 'a1' });
      expect(await client.next()).toEqual({ type: 'auth_ok', id: 'a1' });
      client.send({ type: 'call', id: 'c1', tool: 'calculator', params: { a: 1, b: 2, padding: 'x'.repeat(900_000) } });
      expect(await client.next(10_000)).toMatchObject({ id: 'c1' });
      client.send({ type: 'call', id: 'c2', tool: 'calculator', params: { a: 1, b: 2 } });
      expect(await client.next()).toEqual({ type: 'result', id: 'c2', result: 3 });
      await client.close();
    });
  });

  describe('HTTP routes', () => {
    let gateway: RunningGateway;

    beforeAll(async () => {
      gateway = await startGateway({ AUTH_TOKENS: TOKEN });
    });
    afterAll(() => gateway.close());

    it.each(['/mcp', '/litemcp/calculator', '/utcp/calculator'])('answers bad JSON without a token on %s with 401, not 400', async (path) => {
      const response = await fetch(gateway.http(path), {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: '{"this is": not json',
      });
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toMatch(/^Bearer/);
      await response.arrayBuffer();
    });

    it('parses no body of a request without a valid token, and closes its connection rather than read the rest', async () => {
      const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { padding: 'x'.repeat(900_000) } });
      const parse = jest.spyOn(JSON, 'parse');
      try {
        for (const token of [undefined, 'wrong-token']) {
          for (const path of ['/mcp', '/litemcp/calculator', '/utcp/calculator']) {
            const response = await fetch(gateway.http(path), {
              method: 'POST',
              headers: {
                'content-type': 'application/json',
                accept: 'application/json, text/event-stream',
                ...(token && { authorization: `Bearer ${token}` }),
              },
              body,
            });
            expect([401, 403]).toContain(response.status);
            expect(response.headers.get('connection')).toBe('close');
            await response.arrayBuffer();
          }
        }
        expect(parse.mock.calls.filter(([text]) => typeof text === 'string' && text.length > 100_000)).toEqual([]);
      } finally {
        parse.mockRestore();
      }
      const authorized = await fetch(gateway.http('/litemcp/calculator'), {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
        body: JSON.stringify({ version: [1, 0, 0], tool: 'calculator', arguments: ['1', '2'] }),
      });
      expect(authorized.status).toBe(200);
    });
  });

  describe('connections that never finish their first request (slowloris)', () => {
    let gateway: RunningGateway;

    beforeAll(async () => {
      gateway = await startGateway({ HTTP_HEADERS_TIMEOUT: 0.5, HTTP_MAX_INCOMPLETE_REQUESTS: 3 });
    });
    afterAll(() => gateway.close());

    const closed = (socket: Socket) => new Promise<void>((resolve) => (socket.destroyed ? resolve() : socket.once('close', () => resolve())));

    it('drops a connection whose headers do not arrive within HTTP_HEADERS_TIMEOUT, upgrade or not', async () => {
      const partial = await Promise.all([openTcp(gateway.port), openTcp(gateway.port)]);
      partial[0].write('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n');
      partial[1].write('GET /utcp HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n');
      const keepTrickling = setInterval(() => partial.forEach((socket) => !socket.destroyed && socket.write('X-Slow: 1\r\n')), 100);
      try {
        await Promise.race([Promise.all(partial.map(closed)), new Promise((_, reject) => setTimeout(() => reject(new Error('still open after 5 s')), 5000))]);
      } finally {
        clearInterval(keepTrickling);
      }
    });

    it('drops a new connection at once while HTTP_MAX_INCOMPLETE_REQUESTS are still sending headers, and serves again once they are gone', async () => {
      const holders = await Promise.all([1, 2, 3].map(() => openTcp(gateway.port)));
      holders.forEach((socket) => socket.write('GET /health HTTP/1.1\r\n'));
      const extra = await openTcp(gateway.port);
      extra.write('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
      let answered = '';
      extra.on('data', (chunk: Buffer) => (answered += chunk.toString()));
      await closed(extra);
      expect(answered).toBe('');
      await Promise.all(holders.map(closed));
      expect((await fetch(gateway.http('/health'))).status).toBe(200);
    });
  });
});
