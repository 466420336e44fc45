import type { IncomingMessage } from 'http';
import type { AddressInfo } from 'net';
import { WebSocket, WebSocketServer } from 'ws';
import { CLOSE_POLICY_VIOLATION, GatewayConnection, HEARTBEAT_CLOSE } from './connection';

/** A real socket pair on 127.0.0.1: the server's side wrapped in a connection, and the client. */
async function socketPair(options: { maxBufferedBytes?: number; admit?: (principal: string) => string | undefined } = {}) {
  const server = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  const accepted = new Promise<[WebSocket, IncomingMessage]>((resolve) => server.once('connection', (socket, request) => resolve([socket, request])));
  const client = new WebSocket(`ws://127.0.0.1:${(server.address() as AddressInfo).port}/path`);
  const [socket, request] = await accepted;
  await new Promise((resolve) => (client.readyState === WebSocket.OPEN ? resolve(undefined) : client.once('open', resolve)));
  const connection = new GatewayConnection<{ n: number }>(socket, {
    id: 'c1',
    protocol: 'test',
    route: '/path',
    params: {},
    request,
    maxBufferedBytes: options.maxBufferedBytes,
    admit: options.admit && ((_connection, principal) => options.admit!(principal)),
  });
  const closedAtClient = new Promise<{ code: number; reason: string }>((resolve) =>
    client.once('close', (code, reason) => resolve({ code, reason: reason.toString() })),
  );
  return {
    connection,
    client,
    closedAtClient,
    stop: async () => {
      client.terminate();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

describe('GatewayConnection', () => {
  it('sends objects as JSON and strings as they are, and nothing once closed', async () => {
    const { connection, client, stop } = await socketPair();
    const received: string[] = [];
    client.on('message', (data) => received.push(data.toString()));
    expect(connection.send({ type: 'hello' })).toBe(true);
    expect(connection.send('raw text')).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(received).toEqual(['{"type":"hello"}', 'raw text']);
    connection.close(1000, 'bye');
    expect(connection.send({ type: 'late' })).toBe(false);
    await stop();
  });

  it('closes a client that stops reading (1008) once more than maxBufferedBytes wait, and aborts its signal', async () => {
    const { connection, client, closedAtClient, stop } = await socketPair({ maxBufferedBytes: 64 * 1024 });
    const signal = connection.signal;
    (client as unknown as { _socket: { pause(): void } })._socket.pause();
    let sent = 0;
    while (connection.send('x'.repeat(16 * 1024)) && sent < 100_000) sent += 1;
    expect(connection.isOpen).toBe(false);
    (client as unknown as { _socket: { resume(): void } })._socket.resume();
    const closed = await closedAtClient;
    expect(closed.code).toBe(CLOSE_POLICY_VIOLATION);
    expect(closed.reason).toMatch(/not reading/);
    await new Promise((resolve) => connection.onClose(() => resolve(undefined)));
    expect(signal.aborted).toBe(true);
    await stop();
  });

  it('runs close hooks once, at once when already closed, and lets a hook be taken back', async () => {
    const { connection, stop } = await socketPair();
    const calls: string[] = [];
    connection.onClose(() => calls.push('first'));
    const takeBack = connection.onClose(() => calls.push('taken back'));
    takeBack();
    const closed = new Promise((resolve) => connection.onClose(() => resolve(undefined)));
    connection.close(1000, 'done');
    await closed;
    connection.onClose(() => calls.push('late'));
    expect(calls).toEqual(['first', 'late']);
    await stop();
  });

  it('cuts off a peer that does not finish the close handshake', async () => {
    const { connection, client, stop } = await socketPair();
    // The client never reads again, so it never answers the close frame.
    (client as unknown as { _socket: { pause(): void } })._socket.pause();
    const started = Date.now();
    const closed = new Promise((resolve) => connection.onClose(() => resolve(undefined)));
    connection.close(1000, 'done');
    await closed;
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    await stop();
  });

  it('closes a silent peer with 1001 when its keep-alive times out, and counts a pong as a sign of life', async () => {
    const { connection, client, closedAtClient, stop } = await socketPair();
    // `ws` clients answer pings by themselves: the connection lives as long as they do.
    connection.keepAlive({ intervalMs: 20, timeoutMs: 80 });
    await new Promise((resolve) => setTimeout(resolve, 250));
    expect(connection.isOpen).toBe(true);
    (client as unknown as { _socket: { pause(): void } })._socket.pause();
    await new Promise((resolve) => connection.onClose(() => resolve(undefined)));
    (client as unknown as { _socket: { resume(): void } })._socket.resume();
    expect(await closedAtClient).toEqual({ code: HEARTBEAT_CLOSE.code, reason: HEARTBEAT_CLOSE.reason });
    await stop();
  });

  it('settles a principal proved by an auth frame unless a cap refuses it', async () => {
    const refused = await socketPair({ admit: (principal) => (principal === 'full' ? 'Too many connections' : undefined) });
    expect(refused.connection.authenticate('full')).toBe('Too many connections');
    expect(refused.connection.principal).toBeUndefined();
    expect(refused.connection.authenticate('alice')).toBeUndefined();
    expect(refused.connection.principal).toBe('alice');
    await refused.stop();
  });

  it('closes once its serial queue is idle', async () => {
    const { connection, closedAtClient, stop } = await socketPair();
    const order: string[] = [];
    let release!: () => void;
    void connection.queue().run(() => new Promise<void>((resolve) => (release = () => (order.push('answered'), resolve()))));
    const closing = connection.closeWhenIdle(1001, 'Server shutting down').then(() => order.push('closing'));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(order).toEqual([]);
    release();
    await closing;
    expect(order).toEqual(['answered', 'closing']);
    expect((await closedAtClient).code).toBe(1001);
    await stop();
  });
});
