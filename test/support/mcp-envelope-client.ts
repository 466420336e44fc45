import { WebSocket } from 'ws';

/** A JSON-RPC error the server answered inside a `message` envelope. */
export class JsonRpcError extends Error {
  constructor(readonly error: { code: number; message: string; data?: unknown }) {
    super(`JSON-RPC error ${error.code}: ${error.message}`);
  }
}

/** Authentication did not succeed: the server's `auth` answer (status "failed"), or why there was none. */
export class AuthFailed extends Error {
  constructor(readonly answer: any) {
    super(`Authentication failed: ${JSON.stringify(answer)}`);
  }
}

export interface EnvelopeClientOptions {
  /** Answer the server's `ping` with `pong` (the spec's rule); off to let the heartbeat time out. */
  answerPings?: boolean;
  clientInfo?: { name: string; version: string };
}

/**
 * A client of the MCP-over-WebSocket envelope, written from the spec alone
 * (mcp-over-websocket.md, sections 2, 3 and 7), not from the gateway's code: `auth` first,
 * JSON-RPC in `message` envelopes matched by id, `pong` for every `ping`, and `close` answered.
 * Everything the server sends is kept in `received`, in order.
 */
export class EnvelopeClient {
  readonly received: any[] = [];
  readonly notifications: any[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  sessionId = '';
  private nextId = 1;
  private closing = false;
  private readonly pending = new Map<number | string, { resolve(result: unknown): void; reject(error: Error): void }>();
  private readonly listeners: ((frame: any) => void)[] = [];

  private constructor(
    readonly socket: WebSocket,
    private readonly options: EnvelopeClientOptions,
  ) {
    socket.on('message', (data) => this.onFrame(JSON.parse(data.toString())));
    this.closed = new Promise((resolve) => socket.once('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  }

  /** Connects and authenticates; rejects with {@link AuthFailed} when the server refuses. */
  static async connect(url: string, token: string, options: EnvelopeClientOptions = {}): Promise<EnvelopeClient> {
    const socket = new WebSocket(url);
    await new Promise((resolve, reject) => {
      socket.once('open', resolve);
      socket.once('error', reject);
    });
    const client = new EnvelopeClient(socket, { answerPings: true, ...options });
    client.send({ type: 'auth', token, clientInfo: options.clientInfo ?? { name: 'spec-client', version: '1.0.0' }, timestamp: Date.now() });
    const answer = await client.nextOfType('auth', 5000).catch((error: Error) => {
      throw new AuthFailed(error.message);
    });
    if (answer.status !== 'authenticated') throw new AuthFailed(answer);
    client.sessionId = answer.sessionId;
    return client;
  }

  send(envelope: unknown): void {
    this.socket.send(typeof envelope === 'string' ? envelope : JSON.stringify(envelope));
  }

  /** A JSON-RPC request in a `message` envelope; resolves with its result. */
  request(method: string, params?: unknown, timeoutMs = 5000): Promise<any> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`No answer to ${method} (id ${id})`)), timeoutMs);
      this.pending.set(id, {
        resolve: (result) => (clearTimeout(timer), resolve(result)),
        reject: (error) => (clearTimeout(timer), reject(error)),
      });
      this.sendMessage({ jsonrpc: '2.0', id, method, ...(params === undefined ? {} : { params }) });
    });
  }

  sendMessage(payload: unknown): void {
    this.send({ type: 'message', sessionId: this.sessionId, payload, timestamp: Date.now() });
  }

  /** The MCP handshake of section 3.3: `initialize`, then `notifications/initialized`. */
  async initialize(protocolVersion = '2025-11-25'): Promise<any> {
    const result = await this.request('initialize', { protocolVersion, capabilities: {}, clientInfo: { name: 'spec-client', version: '1.0.0' } });
    this.sendMessage({ jsonrpc: '2.0', method: 'notifications/initialized' });
    return result;
  }

  /** The next frame of `type` the server sends from now on (or already queued since the last read). */
  nextOfType(type: string, timeoutMs = 3000): Promise<any> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.listeners.splice(this.listeners.indexOf(listener), 1);
        reject(new Error(`No "${type}" frame within ${timeoutMs} ms`));
      }, timeoutMs);
      const listener = (frame: any) => {
        if (frame.type !== type) return;
        clearTimeout(timer);
        this.listeners.splice(this.listeners.indexOf(listener), 1);
        resolve(frame);
      };
      this.listeners.push(listener);
    });
  }

  /** Section 2.3.6: sends `close` and waits for the server's answer and the end of the connection. */
  async close(reason = 'Client disconnect'): Promise<{ answer: any; code: number }> {
    const answer = this.nextOfType('close');
    this.closing = true;
    this.send({ type: 'close', sessionId: this.sessionId, reason, timestamp: Date.now() });
    return { answer: await answer, code: (await this.closed).code };
  }

  private onFrame(frame: any): void {
    this.received.push(frame);
    this.listeners.slice().forEach((listener) => listener(frame));
    switch (frame.type) {
      case 'ping':
        if (this.options.answerPings) this.send({ type: 'pong', sessionId: this.sessionId, timestamp: Date.now() });
        break;
      case 'message':
        this.onPayload(frame.payload);
        break;
      case 'close':
        // The server ends the session: answer it, as a close is answered either way.
        if (!this.closing && this.socket.readyState === WebSocket.OPEN)
          this.send({ type: 'close', sessionId: this.sessionId, reason: 'Close acknowledged', timestamp: Date.now() });
        break;
    }
  }

  private onPayload(payload: any): void {
    if (payload.id === undefined || payload.method !== undefined) {
      this.notifications.push(payload);
      return;
    }
    const waiter = this.pending.get(payload.id);
    this.pending.delete(payload.id);
    if (payload.error) waiter?.reject(new JsonRpcError(payload.error));
    else waiter?.resolve(payload.result);
  }
}
