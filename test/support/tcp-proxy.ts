import { createConnection, createServer, Server, Socket } from 'net';

/**
 * A TCP proxy in front of a real service, so a test can take the service away from the gateway
 * (cut every connection and refuse new ones) and bring it back, without touching the service
 * other tests share.
 */
export class TcpProxy {
  private readonly sockets = new Set<Socket>();
  private cut = false;

  private constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  static async start(targetHost: string, targetPort: number): Promise<TcpProxy> {
    const proxy = new TcpProxy(targetHost, targetPort);
    await new Promise<void>((resolve) => proxy.server.listen(0, '127.0.0.1', resolve));
    return proxy;
  }

  get port(): number {
    return (this.server.address() as { port: number }).port;
  }

  private readonly server: Server = createServer((client) => {
    if (this.cut) return client.destroy();
    const upstream = createConnection(this.targetPort, this.targetHost);
    for (const socket of [client, upstream]) {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
      socket.on('error', () => undefined);
    }
    client.pipe(upstream).pipe(client);
    client.once('close', () => upstream.destroy());
    upstream.once('close', () => client.destroy());
  });

  /** Drops every connection and refuses new ones until {@link restore}. */
  interrupt(): void {
    this.cut = true;
    this.sockets.forEach((socket) => socket.destroy());
  }

  restore(): void {
    this.cut = false;
  }

  async close(): Promise<void> {
    this.interrupt();
    await new Promise((resolve) => this.server.close(resolve));
  }
}
