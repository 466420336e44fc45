import type { IncomingMessage } from 'http';
import type { WebSocket } from 'ws';
import type { ParsedFrame } from './frame-parser';

/**
 * What the gateway knows about one WebSocket connection, from the upgrade onwards: its id, the
 * route and path parameters it came in on, and who it is once authenticated. Kept beside the
 * socket rather than on it, so protocol code never mutates `ws` objects.
 */
export interface GatewayConnection {
  readonly id: string;
  /** The route pattern that accepted the upgrade, e.g. `/litemcp/:tool`. */
  readonly route: string;
  readonly params: Readonly<Record<string, string>>;
  readonly request: IncomingMessage;
  /** The authenticated principal; `undefined` until a guard or an auth frame sets it. */
  principal?: string;
  /**
   * Set (in `handleConnection`) by a protocol whose frames are not routed by their `type`, such
   * as plain MCP's JSON-RPC: the adapter hands it every parsed frame instead of a
   * `@SubscribeMessage` handler, so such frames skip Nest's per-frame pipeline altogether.
   */
  receiveFrame?: (frame: ParsedFrame) => void;
}

const connections = new WeakMap<WebSocket, GatewayConnection>();

export function attachConnection(socket: WebSocket, connection: GatewayConnection): void {
  connections.set(socket, connection);
}

/** The connection record of a socket accepted by the gateway's adapter. */
export function connectionOf(socket: WebSocket): GatewayConnection {
  const connection = connections.get(socket);
  if (!connection) throw new Error('Socket was not accepted by GatewayWsAdapter');
  return connection;
}
