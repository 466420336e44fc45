import type { IncomingMessage } from 'http';
import type { AddressInfo } from 'net';
import { WebSocket, WebSocketServer } from 'ws';

/** Items that arrive on their own time, taken in order by a test that waits for each. */
class Arrivals<T> {
  private readonly queued: T[] = [];
  private readonly waiters: ((item: T) => void)[] = [];

  constructor(private readonly describeTimeout: (ms: number) => string) {}

  push(item: T): void {
    const waiter = this.waiters.shift();
    if (waiter) waiter(item);
    else this.queued.push(item);
  }

  next(timeoutMs: number): Promise<T> {
    if (this.queued.length > 0) return Promise.resolve(this.queued.shift()!);
    return new Promise((resolve, reject) => {
      const waiter = (item: T) => {
        clearTimeout(timer);
        resolve(item);
      };
      const timer = setTimeout(() => {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        reject(new Error(this.describeTimeout(timeoutMs)));
      }, timeoutMs);
      this.waiters.push(waiter);
    });
  }
}

/** One client connection as the scripted gateway sees it. */
export class ScriptedConnection {
  private readonly frames = new Arrivals<any>((ms) => `The client sent nothing within ${ms} ms`);
  readonly closed: Promise<{ code: number }>;

  constructor(
    readonly socket: WebSocket,
    readonly request: IncomingMessage,
  ) {
    socket.on('message', (data) => this.frames.push(JSON.parse(data.toString())));
    this.closed = new Promise((resolve) => socket.once('close', (code) => resolve({ code })));
  }

  /** The next frame the client sent. */
  next(timeoutMs = 3000): Promise<any> {
    return this.frames.next(timeoutMs);
  }

  /** Resolves when the client sends nothing for `ms`; rejects with what it did send. */
  async expectSilence(ms = 150): Promise<void> {
    const frame = await this.next(ms).catch(() => undefined);
    if (frame !== undefined) throw new Error(`Expected no frame, got ${JSON.stringify(frame)}`);
  }

  send(frame: Record<string, unknown>): void {
    this.socket.send(JSON.stringify({ timestamp: new Date().toISOString(), ...frame }));
  }

  status(status: string, data: Record<string, unknown> = {}): void {
    this.send({ type: 'status', status, data });
  }

  /** Cuts the connection without a close handshake, as a network failure would. */
  drop(): void {
    this.socket.terminate();
  }
}

/**
 * A WebSocket server on 127.0.0.1 that speaks the LLM gateway's frames as each test scripts
 * them: it greets every connection with `status connected` (session ids `session-1`, `-2`...)
 * and hands the connection to the test, which reads what the client sent and answers.
 */
export class ScriptedGateway {
  private readonly connections = new Arrivals<ScriptedConnection>((ms) => `No client connected within ${ms} ms`);
  private sessions = 0;
  /** Set to refuse upgrades with this HTTP status (a gateway that is down or refuses the token). */
  refuseWith?: number;

  private constructor(private readonly server: WebSocketServer) {
    server.on('connection', (socket, request) => {
      const connection = new ScriptedConnection(socket, request);
      connection.status('connected', { session_id: `session-${++this.sessions}` });
      this.connections.push(connection);
    });
  }

  static async start(): Promise<ScriptedGateway> {
    let refuseWith: () => number | undefined = () => undefined;
    const server = new WebSocketServer({
      host: '127.0.0.1',
      port: 0,
      verifyClient: (_info, done) => (refuseWith() === undefined ? done(true) : done(false, refuseWith(), 'Refused')),
    });
    const gateway = new ScriptedGateway(server);
    refuseWith = () => gateway.refuseWith;
    await new Promise<void>((resolve) => server.once('listening', () => resolve()));
    return gateway;
  }

  get url(): string {
    return `ws://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** The next connection a client opened. */
  accept(timeoutMs = 3000): Promise<ScriptedConnection> {
    return this.connections.next(timeoutMs);
  }

  async close(): Promise<void> {
    this.server.clients.forEach((socket) => socket.terminate());
    await new Promise((resolve) => this.server.close(resolve));
  }
}
