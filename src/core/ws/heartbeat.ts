import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import type { Observable } from 'rxjs';
import { WebSocket } from 'ws';

export interface HeartbeatSettings {
  /** How often the server pings. */
  intervalMs: number;
  /** How long a socket may stay silent (no pong, no frame) before it is closed. */
  timeoutMs: number;
}

/** Close code and reason for a socket whose peer stopped answering. */
export const HEARTBEAT_CLOSE = { code: 1001, reason: 'Heartbeat timeout' } as const;

/** How long a timed-out socket gets to finish the close handshake before it is cut. */
const CLOSE_GRACE_MS = 1000;

/**
 * WebSocket-level keep-alive: a ping every `intervalMs`; a socket that has answered no ping and
 * sent no frame for `timeoutMs` is closed with 1001, so dead peers do not hold connections and
 * sessions open. Every handled frame counts as a sign of life (see {@link HeartbeatInterceptor}).
 */
@Injectable()
export class WsHeartbeat {
  private readonly lastSeen = new WeakMap<WebSocket, number>();

  watch(socket: WebSocket, { intervalMs, timeoutMs }: HeartbeatSettings): void {
    this.alive(socket);
    const timer = setInterval(() => {
      if (socket.readyState !== WebSocket.OPEN) return;
      if (Date.now() - (this.lastSeen.get(socket) ?? 0) > timeoutMs) {
        clearInterval(timer);
        socket.close(HEARTBEAT_CLOSE.code, HEARTBEAT_CLOSE.reason);
        setTimeout(() => socket.terminate(), CLOSE_GRACE_MS).unref();
        return;
      }
      socket.ping();
    }, intervalMs);
    timer.unref();
    socket.on('pong', () => this.alive(socket));
    socket.once('close', () => clearInterval(timer));
  }

  alive(socket: WebSocket): void {
    this.lastSeen.set(socket, Date.now());
  }
}

/** Marks the socket alive whenever one of its frames is handled. */
@Injectable()
export class HeartbeatInterceptor implements NestInterceptor {
  constructor(private readonly heartbeat: WsHeartbeat) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    this.heartbeat.alive(context.switchToWs().getClient<WebSocket>());
    return next.handle();
  }
}
