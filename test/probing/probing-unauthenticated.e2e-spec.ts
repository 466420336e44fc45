import { randomBytes } from 'crypto';
import type { Socket } from 'net';
import { RunningGateway, startGateway } from '../support/gateway';
import { eventually } from '../support/probing';
import { openTcp, streamHugeFrame, upgradeRaw } from '../support/raw-websocket';
import { TestSocket } from '../support/test-socket';

const TOKEN = 'probe-token';
const MCP_TOKEN = 'probe-mcp-token';
const OVER_THE_BOUND = { code: 1009, reason: 'Over 65536 bytes sent before authenticating (WS_UNAUTHENTICATED_MAX_BYTES)' };

/** A client frame's header (masked, with mask key 0 so the payload goes as it is) announcing `length` bytes of text. */
function frameHeader(length: number): Buffer {
  const header = Buffer.alloc(14);
  header[0] = 0x81;
  header[1] = 0x80 | 127;
  header.writeBigUInt64BE(BigInt(length), 2);
  return header;
}

/** A whole client text frame carrying `text`. */
function textFrame(text: string): Buffer {
  const payload = Buffer.from(text);
  return Buffer.concat([frameHeader(payload.length), payload]);
}

/** An upgrade request to `path`, raw. */
const upgradeRequest = (port: number, path: string) =>
  Buffer.from(
    `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
      `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
  );

/**
 * The frames the gateway sends on a raw socket, past its upgrade response (unless `upgraded`: it
 * has been read): text frames as strings, a close frame as its code and reason. `next()` gives
 * undefined when none comes within `ms`.
 */
class ServerFrames {
  private buffered = Buffer.alloc(0);
  private readonly frames: (string | { code: number; reason: string })[] = [];
  private wake?: () => void;

  constructor(
    socket: Socket,
    private upgraded = true,
  ) {
    socket.on('data', (chunk: Buffer) => {
      this.buffered = Buffer.concat([this.buffered, chunk]);
      if (!this.upgraded) {
        const end = this.buffered.indexOf('\r\n\r\n');
        if (end < 0) return;
        expect(this.buffered.subarray(0, 12).toString()).toBe('HTTP/1.1 101');
        this.buffered = this.buffered.subarray(end + 4);
        this.upgraded = true;
      }
      while (this.buffered.length >= 2) {
        const short = this.buffered[1] & 0x7f;
        const start = short === 126 ? 4 : 2;
        const length = short === 126 ? this.buffered.readUInt16BE(2) : short;
        if (this.buffered.length < start + length) break;
        const payload = this.buffered.subarray(start, start + length);
        const opcode = this.buffered[0] & 0x0f;
        this.buffered = this.buffered.subarray(start + length);
        if (opcode === 0x8) this.frames.push({ code: payload.readUInt16BE(0), reason: payload.subarray(2).toString() });
        else if (opcode === 0x1) this.frames.push(payload.toString());
      }
      this.wake?.();
    });
    socket.on('error', () => undefined);
  }

  async next(ms = 3000): Promise<string | { code: number; reason: string } | undefined> {
    const deadline = Date.now() + ms;
    while (this.frames.length === 0 && Date.now() < deadline) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, deadline - Date.now());
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    return this.frames.shift();
  }
}

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

    it.each(['/utcp', '/mcp', '/utcp/calculator'])(
      'closes a socket without a token on %s at the header of a frame announcing more than WS_UNAUTHENTICATED_MAX_BYTES, before its payload comes',
      async (path) => {
        const socket = await upgradeRaw(gateway.port, path);
        const frames = new ServerFrames(socket);
        socket.write(Buffer.concat([frameHeader(16 * 1024 * 1024), Buffer.alloc(1024, 0x20)]));
        // 1 KB of the frame sent, far under the bound: only its header can have told.
        expect(await frames.next()).toEqual(OVER_THE_BOUND);
        socket.destroy();
      },
    );

    it('reads such a header when it arrives a byte at a time, or in the same packet as the upgrade request', async () => {
      const trickled = await upgradeRaw(gateway.port, '/utcp');
      const trickledFrames = new ServerFrames(trickled);
      for (const byte of frameHeader(100_000)) {
        trickled.write(Buffer.from([byte]));
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      expect(await trickledFrames.next()).toEqual(OVER_THE_BOUND);
      trickled.destroy();

      const pipelined = await openTcp(gateway.port);
      const pipelinedFrames = new ServerFrames(pipelined, false);
      pipelined.write(Buffer.concat([upgradeRequest(gateway.port, '/utcp'), textFrame('{"type":"discover","id":"d1"}'), frameHeader(100_000)]));
      expect(await pipelinedFrames.next()).toMatch(/"error"/);
      expect(await pipelinedFrames.next()).toEqual(OVER_THE_BOUND);
      pipelined.destroy();
    });

    it('walks frames pipelined with the upgrade request and its auth frame, and lifts the bound once the socket has authenticated', async () => {
      const socket = await openTcp(gateway.port);
      const frames = new ServerFrames(socket, false);
      const call = (id: string, padding: number) =>
        textFrame(JSON.stringify({ type: 'call', id, tool: 'calculator', params: { a: 1, b: 2, padding: 'x'.repeat(padding) } }));
      socket.write(
        Buffer.concat([
          upgradeRequest(gateway.port, '/utcp'),
          textFrame(JSON.stringify({ type: 'auth', token: TOKEN, id: 'a1' })),
          call('c1', 10),
          call('c2', 200_000),
        ]),
      );
      expect(await frames.next()).toBe(JSON.stringify({ type: 'auth_ok', id: 'a1' }));
      expect(JSON.parse(String(await frames.next()))).toMatchObject({ id: 'c1' });
      expect(JSON.parse(String(await frames.next(10_000)))).toMatchObject({ id: 'c2' });
      socket.destroy();
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

  describe('a socket closed for going over WS_UNAUTHENTICATED_MAX_BYTES', () => {
    const HOLD_MS = 2000;
    let gateway: RunningGateway;
    const serverSockets: Socket[] = [];

    beforeAll(async () => {
      gateway = await startGateway({
        AUTH_TOKENS: TOKEN,
        MCP_WS_AUTH_TOKEN: MCP_TOKEN,
        WS_UNAUTHENTICATED_MAX_BYTES: 65536,
        // UTCP's auth deadline; the envelope's (MCP_WS_AUTH_TIMEOUT) stays at 30 s.
        WS_AUTH_TIMEOUT: HOLD_MS / 1000,
      });
      gateway.app.getHttpServer().on('connection', (socket: Socket) => serverSockets.push(socket));
    });
    afterAll(() => gateway.close());

    // Cut a second after its close frame, each such socket let its client open the next one at
    // once: 300 of them turned over all the time, and the upgrades, connections and collections
    // they cost delayed every authenticated client. Held for WS_AUTH_TIMEOUT, a client gets no
    // more sockets out of the gateway than one that sends nothing.
    it.each(['/utcp', '/mcp', '/utcp/calculator'])(
      'on %s is held, unread, for WS_AUTH_TIMEOUT however fast its client keeps writing, not cut a second after its close frame',
      async (path) => {
        serverSockets.length = 0;
        const socket = await upgradeRaw(gateway.port, path);
        const upgraded = Date.now();
        const frames = new ServerFrames(socket);
        const streamed = streamHugeFrame(socket, 16 * 1024 * 1024);
        expect(await frames.next()).toEqual(OVER_THE_BOUND);
        await streamed;
        expect(Date.now() - upgraded).toBeGreaterThanOrEqual(HOLD_MS);
        // The upgrade request, then at most the read that held the header and one more.
        expect(serverSockets).toHaveLength(1);
        expect(serverSockets[0].bytesRead).toBeLessThan(1024 + 2 * 65536);
      },
    );
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
