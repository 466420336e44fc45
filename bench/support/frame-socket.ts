import { WebSocket } from 'ws';

export interface FrameSocketOptions {
  headers?: Record<string, string>;
  protocols?: string[];
}

/**
 * A WebSocket that hands out the JSON frames it receives one at a time, for clients that keep
 * one request in flight: `next()` resolves with the next frame the server sends. Frames nobody
 * waits for are queued. `ignore` drops frames that answer nothing (heartbeats). Not the tests'
 * `TestSocket`: that one arms a timer per frame it awaits, which on the bench's closed loop
 * would be client work counted against the baseline and the gateway alike.
 */
export class FrameSocket {
  private readonly queue: any[] = [];
  private waiter?: { resolve(frame: any): void; reject(error: Error): void };
  private closedWith?: Error;

  private constructor(
    readonly socket: WebSocket,
    private readonly ignore: (frame: any) => boolean,
  ) {
    socket.on('message', (data) => {
      const frame = JSON.parse(data.toString());
      if (this.ignore(frame)) return;
      const waiter = this.waiter;
      this.waiter = undefined;
      if (waiter) waiter.resolve(frame);
      else this.queue.push(frame);
    });
    socket.once('close', (code) => {
      this.closedWith = new Error(`The connection closed (${code})`);
      this.waiter?.reject(this.closedWith);
    });
  }

  static async open(url: string, options: FrameSocketOptions = {}, ignore: (frame: any) => boolean = () => false): Promise<FrameSocket> {
    const socket = new WebSocket(url, options.protocols ?? [], { headers: options.headers, perMessageDeflate: false });
    const frames = new FrameSocket(socket, ignore);
    await new Promise((resolve, reject) => {
      socket.once('open', resolve);
      socket.once('error', reject);
      socket.once('unexpected-response', (_request, response) => reject(new Error(`${url} refused the upgrade: HTTP ${response.statusCode}`)));
    });
    return frames;
  }

  send(frame: unknown): void {
    this.socket.send(JSON.stringify(frame));
  }

  next(): Promise<any> {
    if (this.queue.length > 0) return Promise.resolve(this.queue.shift());
    if (this.closedWith) return Promise.reject(this.closedWith);
    return new Promise((resolve, reject) => (this.waiter = { resolve, reject }));
  }

  /** Sends `frame` and resolves with the answer. */
  async exchange(frame: unknown): Promise<any> {
    this.send(frame);
    return this.next();
  }

  close(): void {
    this.socket.terminate();
  }
}

/** Fails loudly with the frame when an answer is not the expected one: a bench must not time errors. */
export function expectAnswer(ok: boolean, frame: unknown, what: string): void {
  if (!ok) throw new Error(`Unexpected answer to ${what}: ${JSON.stringify(frame)}`);
}
