import { TestSocket } from './test-socket';

/** How the client hands its token over: the spec's three ways. */
export type TokenPlacement = 'query' | 'message' | 'header';

/** An error frame answering one of this client's requests. */
export class UtcpRequestFailed extends Error {
  constructor(readonly error: { code: string; message: string; details?: unknown }) {
    super(`${error.code}: ${error.message}`);
  }
}

export interface StreamedResult {
  /** Every `partial: true` piece, in order. */
  partials: unknown[];
  /** The final result (the frame without `partial: true`). */
  result: unknown;
}

interface Waiter {
  onFrame(frame: any): void;
  fail(error: Error): void;
}

/**
 * A UTCP 0.1 WebSocket client written from the spec (utcp-websocket-provider.md), not from the
 * gateway's code: `call` frames with a unique id, answers matched by id (so several calls may be
 * in flight), pieces with `partial: true` gathered until the final message. Discovery is the
 * spec's HTTP endpoint, or an initial WebSocket message in the shape the gateway documents
 * (`{"type":"discover","id"}`). The token goes in the query, an auth message or a header.
 */
export class Utcp01Client {
  private readonly waiting = new Map<string | number, Waiter>();
  /** Frames that answered none of this client's requests (auth acknowledgements, id-less errors). */
  readonly unmatched: any[] = [];
  private lastId = 0;

  private constructor(private readonly socket: TestSocket) {
    socket.socket.on('message', (data) => {
      const frame = JSON.parse(data.toString());
      const waiter = frame?.id === undefined || frame?.id === null ? undefined : this.waiting.get(frame.id);
      if (waiter) waiter.onFrame(frame);
      else this.unmatched.push(frame);
    });
    socket.closed.then(({ code }) => this.waiting.forEach((waiter) => waiter.fail(new Error(`Connection closed (${code})`))));
  }

  static async connect(url: string, auth?: { token: string; via: TokenPlacement }): Promise<Utcp01Client> {
    const target = auth?.via === 'query' ? `${url}${url.includes('?') ? '&' : '?'}token=${encodeURIComponent(auth.token)}` : url;
    const headers = auth?.via === 'header' ? { Authorization: `Bearer ${auth.token}` } : undefined;
    const client = new Utcp01Client(await TestSocket.open(target, { headers }));
    if (auth?.via === 'message') client.socket.send({ type: 'auth', token: auth.token });
    return client;
  }

  /** The spec's HTTP discovery endpoint (`discovery_url`). */
  static async discoverOverHttp(url: string, token?: string): Promise<any> {
    const response = await fetch(url, { headers: token ? { Authorization: `Bearer ${token}` } : {} });
    if (!response.ok) throw new Error(`Discovery failed with ${response.status}: ${await response.text()}`);
    return response.json();
  }

  /** Discovery by an initial WebSocket message; the tool definitions it answers with. */
  async discover(): Promise<any> {
    const frame = await this.request({ type: 'discover' }, (answer, done) => done(answer));
    return frame;
  }

  /** Calls a tool; resolves with the final result and the partial pieces before it. */
  call(tool: string, params: Record<string, unknown>, timeoutMs = 5000): Promise<StreamedResult> {
    const partials: unknown[] = [];
    return this.request(
      { type: 'call', tool, params },
      (frame, done) => {
        if (frame.partial === true) partials.push(frame.result);
        else done({ partials, result: frame.result });
      },
      timeoutMs,
    );
  }

  close(): Promise<{ code: number; reason: string }> {
    return this.socket.close();
  }

  private request<T>(message: Record<string, unknown>, onAnswer: (frame: any, done: (value: T) => void) => void, timeoutMs = 5000): Promise<T> {
    const id = `req-${(this.lastId += 1)}`;
    return new Promise<T>((resolve, reject) => {
      const finish = (settle: () => void) => {
        clearTimeout(timer);
        this.waiting.delete(id);
        settle();
      };
      const timer = setTimeout(() => finish(() => reject(new Error(`No answer to ${id} within ${timeoutMs} ms`))), timeoutMs);
      this.waiting.set(id, {
        onFrame: (frame) => {
          if (frame.type === 'error') finish(() => reject(new UtcpRequestFailed(frame.error)));
          else onAnswer(frame, (value) => finish(() => resolve(value)));
        },
        fail: (error) => finish(() => reject(error)),
      });
      this.socket.send({ ...message, id });
    });
  }
}
