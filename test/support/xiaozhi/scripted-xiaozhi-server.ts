import { IncomingHttpHeaders } from 'http';
import { AddressInfo } from 'net';
import { WebSocket, WebSocketServer } from 'ws';

type Frame = { text: string } | { binary: Buffer };

/** One device's connection as the scripted server sees it: what arrived, in order, and a way to answer. */
export class ScriptedConnection {
  private readonly frames: Frame[] = [];
  private readonly waiters = new Set<() => void>();

  constructor(
    readonly socket: WebSocket,
    readonly headers: IncomingHttpHeaders,
    readonly path: string,
  ) {
    socket.on('message', (data: Buffer, isBinary) => {
      this.frames.push(isBinary ? { binary: Buffer.from(data) } : { text: data.toString('utf8') });
      for (const wake of [...this.waiters]) wake();
    });
  }

  /** The next text frame, as sent. Binary frames before it stay queued for {@link nextBinary}. */
  nextText(timeoutMs = 3000): Promise<string> {
    return this.take((frame): frame is { text: string } => 'text' in frame, timeoutMs).then((frame) => frame.text);
  }

  async nextJson(timeoutMs?: number): Promise<any> {
    return JSON.parse(await this.nextText(timeoutMs));
  }

  nextBinary(timeoutMs = 3000): Promise<Buffer> {
    return this.take((frame): frame is { binary: Buffer } => 'binary' in frame, timeoutMs).then((frame) => frame.binary);
  }

  /** Binary frames received and not taken yet. */
  pendingBinaryCount(): number {
    return this.frames.filter((frame) => 'binary' in frame).length;
  }

  /** Resolves with the text frame that arrives within `ms`, or undefined when none does. */
  async quietText(ms: number): Promise<string | undefined> {
    return this.nextText(ms).catch(() => undefined);
  }

  send(message: unknown): void {
    this.socket.send(typeof message === 'string' ? message : JSON.stringify(message));
  }

  sendBinary(frame: Uint8Array): void {
    this.socket.send(frame, { binary: true });
  }

  /** The server hello of docs/websocket.md, with `overrides`. */
  hello(overrides: Record<string, unknown> = {}): void {
    this.send({
      type: 'hello',
      transport: 'websocket',
      session_id: 'session-1',
      audio_params: { format: 'opus', sample_rate: 24000, channels: 1, frame_duration: 60 },
      ...overrides,
    });
  }

  private take<T extends Frame>(matches: (frame: Frame) => frame is T, timeoutMs: number): Promise<T> {
    return new Promise((resolve, reject) => {
      const attempt = () => {
        const index = this.frames.findIndex(matches);
        if (index < 0) return false;
        const [frame] = this.frames.splice(index, 1);
        resolve(frame as T);
        return true;
      };
      if (attempt()) return;
      const timer = setTimeout(() => {
        this.waiters.delete(wake);
        reject(new Error(`No frame within ${timeoutMs} ms`));
      }, timeoutMs);
      const wake = () => {
        if (!attempt()) return;
        clearTimeout(timer);
        this.waiters.delete(wake);
      };
      this.waiters.add(wake);
    });
  }
}

/**
 * A bare WebSocket server on 127.0.0.1 standing in for the gateway in the simulator's own specs:
 * the spec plays the server's side by hand.
 */
export class ScriptedXiaozhiServer {
  private readonly connections: ScriptedConnection[] = [];
  private readonly waiters = new Set<() => void>();

  private constructor(private readonly server: WebSocketServer) {
    server.on('connection', (socket, request) => {
      this.connections.push(new ScriptedConnection(socket, request.headers, request.url ?? ''));
      for (const wake of [...this.waiters]) wake();
    });
  }

  static start(): Promise<ScriptedXiaozhiServer> {
    return new Promise((resolve) => {
      const server: WebSocketServer = new WebSocketServer({ host: '127.0.0.1', port: 0 }, () => resolve(new ScriptedXiaozhiServer(server)));
    });
  }

  get url(): string {
    return `ws://127.0.0.1:${(this.server.address() as AddressInfo).port}/xiaozhi/v1/`;
  }

  /** The next device to connect. */
  nextConnection(timeoutMs = 3000): Promise<ScriptedConnection> {
    return new Promise((resolve, reject) => {
      const attempt = () => {
        const connection = this.connections.shift();
        if (connection) resolve(connection);
        return connection !== undefined;
      };
      if (attempt()) return;
      const timer = setTimeout(() => {
        this.waiters.delete(wake);
        reject(new Error(`No connection within ${timeoutMs} ms`));
      }, timeoutMs);
      const wake = () => {
        if (!attempt()) return;
        clearTimeout(timer);
        this.waiters.delete(wake);
      };
      this.waiters.add(wake);
    });
  }

  close(): Promise<void> {
    for (const client of this.server.clients) client.terminate();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
