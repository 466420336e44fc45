import { CallHandler, ExecutionContext, Inject, Injectable, NestInterceptor } from '@nestjs/common';
import type { Observable } from 'rxjs';
import { GATEWAY_CONFIG, GatewayConfig } from '../../config/gateway-config';
import type { GatewayConnection, KeepAliveOptions } from './connection';

/**
 * A route's keep-alive, as a Nest interceptor of each connection's opening (`onOpen`): it starts
 * the connection's heartbeat, which from then on hears the connection's frames and pongs as
 * signs of life and closes a peer that stays silent. Every route gets this one unless its
 * `@ProtocolGateway({ heartbeat })` names one of its own (a protocol with its own ping, as the
 * MCP envelope has), so no protocol can leave a dead peer's socket open until TCP notices.
 */
@Injectable()
export class HeartbeatInterceptor implements NestInterceptor {
  constructor(@Inject(GATEWAY_CONFIG) protected readonly config: GatewayConfig) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const connection = context.switchToWs().getClient<GatewayConnection>();
    connection.keepAlive(this.keepAliveOf(connection));
    return next.handle();
  }

  /** WebSocket pings every `CLOUD_PING_INTERVAL`, answered by every client by itself; closed (1001) after `CLOUD_PING_TIMEOUT` of silence. */
  protected keepAliveOf(_connection: GatewayConnection): KeepAliveOptions {
    return { intervalMs: this.config.server.pingIntervalMs, timeoutMs: this.config.server.pingTimeoutMs };
  }
}
