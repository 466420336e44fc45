import { performance } from 'perf_hooks';
import { WebSocket } from 'ws';
import { MessageInbox } from './message-inbox';

export interface RawXiaozhiOptions {
  /** Sent as `Authorization: Bearer <token>` when set. */
  token?: string;
  /** The `Device-Id` header, when set. */
  deviceId?: string;
  /** The `Protocol-Version` header, when set. */
  protocolVersion?: string | number;
}

/**
 * A bare WebSocket on the xiaozhi route, for what the firmware never does (audio before its
 * hello, no hello at all, frames that lie): it sends exactly what a test gives it, keeps every
 * JSON message it receives in a {@link MessageInbox}, and counts the binary frames. Unlike
 * {@link XiaozhiDevice}, it sends no hello of its own.
 */
export class RawXiaozhiSocket {
  readonly inbox = new MessageInbox();
  /** Binary frames received (the gateway's audio). */
  binaryFrames = 0;
  /** Resolves with the close code and reason once the socket has closed, and when, on `performance.now()`. */
  readonly closed: Promise<{ code: number; reason: string; atMs: number }>;

  private constructor(readonly socket: WebSocket) {
    socket.on('message', (data, isBinary) => {
      if (isBinary) return void (this.binaryFrames += 1);
      let message: unknown;
      try {
        message = JSON.parse(data.toString());
      } catch {
        return;
      }
      this.inbox.add({ atMs: performance.now(), message });
    });
    this.closed = new Promise((resolve) => socket.once('close', (code, reason) => resolve({ code, reason: reason.toString(), atMs: performance.now() })));
  }

  /** Connects to `url` with the headers `options` name; rejects when the upgrade is refused or fails. */
  static open(url: string, options: RawXiaozhiOptions = {}): Promise<RawXiaozhiSocket> {
    const headers: Record<string, string> = {};
    if (options.token !== undefined) headers.Authorization = `Bearer ${options.token}`;
    if (options.deviceId !== undefined) headers['Device-Id'] = options.deviceId;
    if (options.protocolVersion !== undefined) headers['Protocol-Version'] = String(options.protocolVersion);
    const socket = new WebSocket(url, { headers, perMessageDeflate: false });
    const raw = new RawXiaozhiSocket(socket);
    return new Promise((resolve, reject) => {
      socket.once('open', () => resolve(raw));
      socket.once('unexpected-response', (_request, response) => {
        response.resume();
        socket.terminate();
        reject(new Error(`The upgrade was refused with ${response.statusCode}`));
      });
      socket.once('error', reject);
    });
  }

  get isOpen(): boolean {
    return this.socket.readyState === WebSocket.OPEN;
  }

  /** A text frame: `message` as it is when a string, else as JSON. */
  sendText(message: unknown): void {
    this.socket.send(typeof message === 'string' ? message : JSON.stringify(message));
  }

  sendBinary(data: Uint8Array): void {
    this.socket.send(data, { binary: true });
  }

  /** The first JSON message of `type` (matching `predicate`) not yet returned, waiting up to `timeoutMs`. */
  next<T = any>(type: string, predicate?: (message: any) => boolean, timeoutMs = 5000): Promise<T> {
    return this.inbox.next<T>(type, predicate, timeoutMs);
  }

  /** Closes the socket (if still open) and resolves once it has closed. */
  async close(): Promise<void> {
    this.inbox.close('The socket closed');
    if (this.socket.readyState === WebSocket.CONNECTING || this.socket.readyState === WebSocket.OPEN) this.socket.close();
    await this.closed;
  }
}
