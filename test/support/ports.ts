import { createServer } from 'net';

/** Listens on `port` of 127.0.0.1 and lets it go at once; rejects when someone else holds it. */
export function listenOn(port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const probe = createServer().once('error', reject);
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve()));
  });
}

/** A port nobody listens on right now: bind port 0, read it, let it go. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}
