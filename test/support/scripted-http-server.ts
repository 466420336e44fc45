import { createServer, IncomingMessage, ServerResponse } from 'http';
import type { AddressInfo, Socket } from 'net';

/**
 * What the scripted OpenAI-compatible servers of the tests share: a server on 127.0.0.1 and a
 * free port, replies queued in order, and a close that does not wait for clients still
 * connected (their sockets are destroyed). Each server answers its own endpoint in `handle`.
 */
export abstract class ScriptedHttpServer<Reply> {
  /** The replies not yet given, in order. */
  protected readonly script: Reply[] = [];
  private readonly server = createServer();
  private readonly sockets = new Set<Socket>();

  protected constructor() {
    this.server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
    this.server.on('request', (request, response) => void this.handle(request, response));
  }

  /** The base URL an `openai` client is given, ending in `/v1/`. */
  get baseUrl(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1/`;
  }

  /** Queues replies for the next requests, in order. */
  reply(...replies: Reply[]): this {
    this.script.push(...replies);
    return this;
  }

  async close(): Promise<void> {
    this.sockets.forEach((socket) => socket.destroy());
    await new Promise((resolve) => this.server.close(resolve));
  }

  protected async listen(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return this;
  }

  protected abstract handle(request: IncomingMessage, response: ServerResponse): Promise<void>;
}
