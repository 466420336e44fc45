import { ClientOptions, WebSocket } from 'ws';

/** An upgrade the server refused: its HTTP status and body. */
export class UpgradeRefused extends Error {
  constructor(
    readonly status: number,
    readonly body: string,
    readonly headers: Record<string, string | string[] | undefined>,
  ) {
    super(`Upgrade refused with ${status}: ${body}`);
  }
}

/** The refusal an upgrade met (fails the test if it was accepted, or failed otherwise). */
export async function refusal(opening: Promise<unknown>): Promise<UpgradeRefused> {
  const error = await opening.then(
    () => undefined,
    (failure: unknown) => failure,
  );
  expect(error).toBeInstanceOf(UpgradeRefused);
  return error as UpgradeRefused;
}

/**
 * A `ws` client for tests: frames are queued as they arrive and read with `next()`, so a test
 * reads the conversation in order without racing the socket.
 */
export class TestSocket {
  private readonly inbox: string[] = [];
  private readonly waiters: ((frame: string) => void)[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;

  private constructor(readonly socket: WebSocket) {
    socket.on('message', (data) => {
      const text = data.toString();
      const waiter = this.waiters.shift();
      if (waiter) waiter(text);
      else this.inbox.push(text);
    });
    this.closed = new Promise((resolve) => socket.once('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  }

  /** Connects; rejects with {@link UpgradeRefused} when the server answers the upgrade with a status. */
  static open(url: string, options: ClientOptions & { protocols?: string[] } = {}): Promise<TestSocket> {
    const { protocols, ...rest } = options;
    const socket = new WebSocket(url, protocols, rest);
    const client = new TestSocket(socket);
    return new Promise((resolve, reject) => {
      socket.once('open', () => resolve(client));
      socket.once('unexpected-response', (_request, response) => {
        let body = '';
        response.on('data', (chunk: Buffer) => (body += chunk.toString()));
        response.on('end', () => reject(new UpgradeRefused(response.statusCode ?? 0, body, response.headers)));
      });
      socket.once('error', (error) => reject(error));
    });
  }

  send(frame: unknown): void {
    this.socket.send(typeof frame === 'string' ? frame : JSON.stringify(frame));
  }

  /** The next frame, as text. */
  nextText(timeoutMs = 3000): Promise<string> {
    const queued = this.inbox.shift();
    if (queued !== undefined) return Promise.resolve(queued);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        reject(new Error(`No frame within ${timeoutMs} ms`));
      }, timeoutMs);
      const waiter = (frame: string) => {
        clearTimeout(timer);
        resolve(frame);
      };
      this.waiters.push(waiter);
    });
  }

  /** The next frame, parsed. */
  async next<T = any>(timeoutMs?: number): Promise<T> {
    return JSON.parse(await this.nextText(timeoutMs)) as T;
  }

  /** Resolves when no frame arrives for `ms`; rejects with the frame that did. */
  async expectSilence(ms = 200): Promise<void> {
    try {
      const frame = await this.nextText(ms);
      throw new Error(`Expected silence, got ${frame}`);
    } catch (error) {
      if (!(error as Error).message.startsWith('No frame within')) throw error;
    }
  }

  close(): Promise<{ code: number; reason: string }> {
    if (this.socket.readyState === WebSocket.OPEN || this.socket.readyState === WebSocket.CONNECTING) this.socket.close();
    return this.closed;
  }
}
