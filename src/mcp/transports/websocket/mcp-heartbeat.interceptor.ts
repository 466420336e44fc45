import { Injectable } from '@nestjs/common';
import type { GatewayConnection, KeepAliveOptions } from '../../../core/ws/connection';
import { HeartbeatInterceptor } from '../../../core/ws/heartbeat.interceptor';
import { PLAIN_MCP_SUBPROTOCOL } from '../../mcp.constants';
import type { McpSocketSession } from './mcp-socket-session';

/**
 * MCP's keep-alive (mcp-over-websocket.md, section 5): `MCP_WS_HEARTBEAT_INTERVAL` and
 * `MCP_WS_HEARTBEAT_TIMEOUT` instead of the gateway's, the envelope's own `ping` envelope (plain
 * MCP has none: WebSocket pings), and a silent peer told the session's way.
 */
@Injectable()
export class McpHeartbeatInterceptor extends HeartbeatInterceptor {
  protected override keepAliveOf(connection: GatewayConnection<McpSocketSession>): KeepAliveOptions {
    const { heartbeatIntervalMs: intervalMs, heartbeatTimeoutMs: timeoutMs } = this.config.mcp.ws;
    // The session is made by the gateway's `onOpen`, inside this interceptor: it is read when the heartbeat fires.
    const ping = connection.subprotocol === PLAIN_MCP_SUBPROTOCOL ? undefined : () => connection.state.ping?.();
    return { intervalMs, timeoutMs, ping, onTimeout: () => connection.state.heartbeatTimedOut(timeoutMs) };
  }
}
