import { Logger } from '@nestjs/common';
import type { IncomingMessage, Server } from 'http';
import type { Socket } from 'net';
import { Server as TlsServer } from 'tls';
import type { RequestHeaderLimits } from '../../config/gateway-config';
import { ThrottledWarning } from '../logging/throttled-warning';

/**
 * Against slowloris: a connection that never finishes its first request (an HTTP request or a
 * WebSocket upgrade) is counted from the moment it opens and dropped once `timeoutMs` has passed,
 * and past `maxIncomplete` such connections a new one is dropped at once. Node's own
 * `headersTimeout` is only checked every 30 s and no cap counts these sockets, so a client
 * could hold thousands for over a minute each. Later requests of a keep-alive connection are
 * held to `headersTimeout`, set to the same value.
 */
export function limitRequestHeaders(server: Server, limits: RequestHeaderLimits): void {
  const logger = new Logger('HTTP');
  const refusals = new ThrottledWarning(logger);
  const waiting = new WeakMap<Socket, () => void>();
  let incomplete = 0;
  server.headersTimeout = Math.min(server.headersTimeout, limits.timeoutMs);

  // A TLS server's requests come on the decrypted socket, which exists once the handshake is done.
  server.on(server instanceof TlsServer ? 'secureConnection' : 'connection', (socket: Socket) => {
    if (incomplete >= limits.maxIncomplete) {
      refusals.warn(`Dropped connections: ${limits.maxIncomplete} are still sending their first request (HTTP_MAX_INCOMPLETE_REQUESTS)`);
      socket.destroy();
      return;
    }
    incomplete += 1;
    const deadline = setTimeout(() => socket.destroy(), limits.timeoutMs);
    deadline.unref();
    const settle = () => {
      if (!waiting.delete(socket)) return;
      clearTimeout(deadline);
      // A socket that lives on (a WebSocket, a keep-alive connection) keeps nothing of this.
      socket.off('close', settle);
      incomplete -= 1;
    };
    waiting.set(socket, settle);
    socket.once('close', settle);
  });
  const headersReceived = (request: IncomingMessage) => waiting.get(request.socket)?.();
  server.prependListener('request', headersReceived);
  server.prependListener('upgrade', headersReceived);
}
