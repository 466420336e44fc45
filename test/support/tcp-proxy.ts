import { createConnection, createServer, Server, Socket } from 'net';
import type { AddressInfo } from 'net';

/**
 * A TCP relay on 127.0.0.1 in front of a local port, so a test can cut connections the way a
 * network does (no close frame, no FIN from the far end) and keep clients out for a while.
 */
export class TcpProxy {
  private readonly pairs = new Set<[Socket, Socket]>();
  /** While true, new connections are dropped at once. */
  refusing = false;

  private constructor(private readonly server: Server) {}

  static async start(targetPort: number): Promise<TcpProxy> {
    const server = createServer();
    const proxy = new TcpProxy(server);
    server.on('connection', (client) => {
      if (proxy.refusing) {
        client.destroy();
        return;
      }
      const upstream = createConnection(targetPort, '127.0.0.1');
      const pair: [Socket, Socket] = [client, upstream];
      proxy.pairs.add(pair);
      const cut = () => {
        client.destroy();
        upstream.destroy();
        proxy.pairs.delete(pair);
      };
      client.on('error', cut).on('close', cut);
      upstream.on('error', cut).on('close', cut);
      client.pipe(upstream);
      upstream.pipe(client);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return proxy;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  /** Destroys every relayed connection on both sides. */
  cutAll(): void {
    for (const [client, upstream] of this.pairs) {
      client.destroy();
      upstream.destroy();
    }
    this.pairs.clear();
  }

  async close(): Promise<void> {
    this.cutAll();
    await new Promise((resolve) => this.server.close(resolve));
  }
}
