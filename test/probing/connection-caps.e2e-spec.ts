import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ConnectionRegistry } from '../../src/core/ws/connection-registry';
import { RunningGateway, startGateway } from '../support/gateway';
import { TestSocket, UpgradeRefused } from '../support/test-socket';

const refusalOf = (opening: Promise<TestSocket>) =>
  opening.then(
    () => undefined,
    (error: UpgradeRefused) => error,
  );

async function until(condition: () => boolean, ms = 3000): Promise<void> {
  const started = Date.now();
  while (!condition()) {
    if (Date.now() - started > ms) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('connection caps', () => {
  describe('by address, protocol and in total', () => {
    let gateway: RunningGateway;
    afterEach(() => gateway.close());

    it('refuses a remote address past WS_MAX_CONNECTIONS_PER_ADDRESS with 429, on every route', async () => {
      gateway = await startGateway({ WS_MAX_CONNECTIONS_PER_ADDRESS: 3 });
      const held = [
        await TestSocket.open(gateway.ws('/litemcp/calculator')),
        await TestSocket.open(gateway.ws('/utcp')),
        await TestSocket.open(gateway.ws('/')),
      ];
      const refusal = await refusalOf(TestSocket.open(gateway.ws('/litemcp/calculator')));
      expect(refusal).toMatchObject({ status: 429, headers: expect.objectContaining({ 'retry-after': '1' }) });
      expect(JSON.parse(refusal!.body).error.message).toMatch(/Too many connections from 127\.0\.0\.1: at most 3 \(WS_MAX_CONNECTIONS_PER_ADDRESS\)/);
      await held[0].close();
      await until(() => gateway.app.get(ConnectionRegistry).size === 2);
      await (await TestSocket.open(gateway.ws('/litemcp/calculator'))).close();
      await Promise.all(held.slice(1).map((socket) => socket.close()));
    });

    it('refuses LiteMCP and UTCP past WS_MAX_CONNECTIONS_PER_PROTOCOL with 503, and everything past WS_MAX_CONNECTIONS', async () => {
      gateway = await startGateway({ WS_MAX_CONNECTIONS_PER_PROTOCOL: 2, WS_MAX_CONNECTIONS: 5 });
      const held = [await TestSocket.open(gateway.ws('/utcp')), await TestSocket.open(gateway.ws('/utcp/calculator'))];
      expect(await refusalOf(TestSocket.open(gateway.ws('/utcp')))).toMatchObject({
        status: 503,
        body: expect.stringMatching(/at most 2 \(WS_MAX_CONNECTIONS_PER_PROTOCOL\)/),
      });
      held.push(await TestSocket.open(gateway.ws('/litemcp/calculator')), await TestSocket.open(gateway.ws('/litemcp/calculator')));
      expect(await refusalOf(TestSocket.open(gateway.ws('/litemcp/calculator')))).toMatchObject({ status: 503 });
      held.push(await TestSocket.open(gateway.ws('/')));
      expect(await refusalOf(TestSocket.open(gateway.ws('/')))).toMatchObject({ status: 503, body: expect.stringMatching(/holds 5 \(WS_MAX_CONNECTIONS\)/) });
      await Promise.all(held.map((socket) => socket.close()));
    });
  });

  describe('with tokens', () => {
    let gateway: RunningGateway;
    beforeAll(async () => {
      gateway = await startGateway({
        AUTH_TOKENS: 'alpha,beta',
        WS_MAX_CONNECTIONS_PER_PRINCIPAL: 2,
        WS_MAX_CONNECTIONS_PER_PROTOCOL: 3,
        WS_MAX_UNAUTHENTICATED: 2,
        WS_AUTH_TIMEOUT: 0.4,
      });
    });
    afterAll(() => gateway.close());

    it('refuses a token past WS_MAX_CONNECTIONS_PER_PRINCIPAL, at the upgrade and at an auth frame, and not another token', async () => {
      const held = [await TestSocket.open(gateway.ws('/?token=alpha')), await TestSocket.open(gateway.ws('/litemcp/calculator?token=alpha'))];
      expect(await refusalOf(TestSocket.open(gateway.ws('/utcp?token=alpha')))).toMatchObject({
        status: 429,
        body: expect.stringMatching(/WS_MAX_CONNECTIONS_PER_PRINCIPAL/),
      });
      const byFrame = await TestSocket.open(gateway.ws('/utcp'));
      byFrame.send({ type: 'auth', token: 'alpha', id: 1 });
      expect(await byFrame.next()).toMatchObject({
        type: 'error',
        error: { code: 'FORBIDDEN', message: expect.stringMatching(/WS_MAX_CONNECTIONS_PER_PRINCIPAL/) },
      });
      held.push(await TestSocket.open(gateway.ws('/utcp?token=beta')));
      await Promise.all([...held, byFrame].map((socket) => socket.close()));
    });

    it('does not count sockets that have not authenticated, bounds them, and closes them at WS_AUTH_TIMEOUT', async () => {
      const waiting = [await TestSocket.open(gateway.ws('/utcp')), await TestSocket.open(gateway.ws('/utcp'))];
      expect(await refusalOf(TestSocket.open(gateway.ws('/utcp')))).toMatchObject({ status: 503, body: expect.stringMatching(/WS_MAX_UNAUTHENTICATED/) });
      // Three real clients fit the per-protocol cap of 3 beside the two strangers.
      const real = [await TestSocket.open(gateway.ws('/utcp?token=beta')), await TestSocket.open(gateway.ws('/utcp?token=alpha'))];
      expect(await Promise.all(waiting.map((socket) => socket.closed))).toEqual([
        { code: 1008, reason: 'Authentication timeout: no auth frame within 400 ms' },
        { code: 1008, reason: 'Authentication timeout: no auth frame within 400 ms' },
      ]);
      const third = await TestSocket.open(gateway.ws('/utcp'));
      third.send({ type: 'auth', token: 'beta', id: 2 });
      expect(await third.next()).toEqual({ type: 'auth_ok', id: 2 });
      expect(await refusalOf(TestSocket.open(gateway.ws('/utcp?token=beta')))).toMatchObject({
        status: 503,
        body: expect.stringMatching(/WS_MAX_CONNECTIONS_PER_PROTOCOL/),
      });
      await Promise.all([...real, third].map((socket) => socket.close()));
    });
  });

  describe('calls in flight on one connection', () => {
    let gateway: RunningGateway;
    beforeAll(async () => {
      gateway = await startGateway({ WS_MAX_CALLS_IN_FLIGHT: 2, MCP_WS_AUTH_TOKEN: 'mcp-secret', MCP_WS_MAX_CONNECTIONS: 2 });
    });
    afterAll(() => gateway.close());

    const countdown = { seconds: 0.3, interval: 0.3 };

    it('refuses a UTCP call past WS_MAX_CALLS_IN_FLIGHT as RATE_LIMITED, and takes the next once one ends', async () => {
      const client = await TestSocket.open(gateway.ws('/utcp'));
      for (const id of [1, 2, 3]) client.send({ type: 'call', id, tool: 'countdown', params: countdown });
      expect(await client.next()).toMatchObject({
        type: 'error',
        id: 3,
        error: { code: 'RATE_LIMITED', message: expect.stringMatching(/at most 2 \(WS_MAX_CALLS_IN_FLIGHT\)/) },
      });
      const ended = new Set<number>();
      while (ended.size < 2) {
        const frame = await client.next();
        if (frame.partial !== true) ended.add(frame.id);
      }
      expect([...ended].sort()).toEqual([1, 2]);
      client.send({ type: 'call', id: 5, tool: 'countdown', params: countdown });
      expect(await client.next()).toMatchObject({ id: 5, type: 'result' });
      await client.close();
    });

    it('answers an MCP call past it with JSON-RPC -32029, on its own connection only', async () => {
      const open = () => TestSocket.open(gateway.ws('/mcp'), { protocols: ['mcp'], headers: { Authorization: 'Bearer mcp-secret' } });
      const [busy, other] = [await open(), await open()];
      const call = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'countdown', arguments: countdown } });
      for (const id of [1, 2, 3]) busy.send(call(id));
      other.send(call(1));
      expect(await busy.next()).toMatchObject({ id: 3, error: { code: -32029, message: expect.stringMatching(/WS_MAX_CALLS_IN_FLIGHT/) } });
      expect(await other.next()).toMatchObject({ id: 1, result: { structuredContent: { done: true } } });
      await Promise.all([busy.close(), other.close()]);
    });

    it('bounds an MCP Streamable HTTP session the same way', async () => {
      const client = new Client({ name: 'calls-in-flight', version: '1.0.0' });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(gateway.http('/mcp')), { requestInit: { headers: { Authorization: 'Bearer mcp-secret' } } }),
      );
      const calls = await Promise.allSettled([1, 2, 3].map(() => client.callTool({ name: 'countdown', arguments: countdown })));
      expect(calls.filter((call) => call.status === 'fulfilled')).toHaveLength(2);
      expect(calls.find((call) => call.status === 'rejected')).toMatchObject({
        reason: { code: -32029, message: expect.stringMatching(/WS_MAX_CALLS_IN_FLIGHT/) },
      });
      await client.close();
    });
  });

  describe('a client that stops reading', () => {
    let gateway: RunningGateway;
    beforeAll(async () => {
      gateway = await startGateway({ WS_MAX_BUFFERED_BYTES: 262_144 });
    });
    afterAll(() => gateway.close());

    it('is closed once WS_MAX_BUFFERED_BYTES wait for it, and everything it held is let go', async () => {
      const reader = await TestSocket.open(gateway.ws('/utcp'));
      const raw = (reader.socket as unknown as { _socket: { pause(): void } })._socket;
      raw.pause();
      const call = JSON.stringify({ type: 'utcp' });
      const before = process.memoryUsage().rss;
      // Each manual is several KB: 10,000 of them would be tens of MB if buffered.
      for (let index = 0; index < 10_000 && reader.socket.readyState === reader.socket.OPEN; index += 1) reader.socket.send(call);
      await until(() => gateway.app.get(ConnectionRegistry).size === 0, 5000);
      expect(process.memoryUsage().rss - before).toBeLessThan(64 * 1024 * 1024);
      reader.socket.terminate();
    });
  });
});
