import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import { WebSocket } from 'ws';
import { FrameEvent, MalformedFrame, OversizedFrame } from '../../core/ws/frame-parser';
import type { GatewayConnection } from '../../core/ws/gateway-connection';
import { jsonRpcError, JsonRpcErrorResponse, requestIdOf } from '../json-rpc-error';
import type { EnvelopeError } from './envelope';
import { Heartbeat } from './heartbeat';
import type { McpSessionContext, McpSocketSession } from './mcp-socket-session';
import { PlainFrameTransport } from './plain-frame.transport';

/**
 * One plain MCP connection (subprotocol `mcp`): authenticated at the upgrade, one JSON-RPC
 * message per text frame to and from an SDK server of its own. Plain MCP has no heartbeat
 * message, so liveness uses WebSocket ping frames, which every client answers by itself, on the
 * same interval and timeout as the envelope's.
 */
export class PlainSession implements McpSocketSession {
  private readonly transport: PlainFrameTransport;
  private readonly server: Server;
  private readonly heartbeat: Heartbeat;
  private disposed = false;

  constructor(
    private readonly socket: WebSocket,
    connection: GatewayConnection,
    context: McpSessionContext,
  ) {
    this.transport = new PlainFrameTransport(socket);
    this.server = context.servers.create({ principal: connection.principal, connectionId: connection.id });
    void this.server.connect(this.transport);
    this.heartbeat = new Heartbeat({
      intervalMs: context.settings.heartbeatIntervalMs,
      timeoutMs: context.settings.heartbeatTimeoutMs,
      ping: () => socket.ping(),
      onTimeout: () => {
        socket.terminate();
        void this.dispose();
      },
    });
    socket.on('pong', () => this.heartbeat.alive());
  }

  /**
   * One frame, whatever event the adapter routed it to by its `type` (JSON-RPC has no `type`, so
   * a frame that has one is just an invalid message here). Anything that is not a JSON-RPC
   * message is answered with a JSON-RPC error response.
   */
  receive(event: string, data: unknown): void {
    if (event === FrameEvent.MALFORMED) {
      return this.answer(jsonRpcError(null, ErrorCode.ParseError, 'Parse error', (data as MalformedFrame).reason));
    }
    if (event === FrameEvent.TOO_LARGE) {
      const { bytes, limit } = data as OversizedFrame;
      return this.answer(jsonRpcError(null, ErrorCode.InvalidRequest, 'Invalid Request', `Message of ${bytes} bytes is over the ${limit}-byte limit`));
    }
    const problem = this.transport.deliver(data);
    if (problem) this.answer(jsonRpcError(requestIdOf(data), ErrorCode.InvalidRequest, 'Invalid Request', `Message is ${problem}`));
  }

  reportError(error: EnvelopeError): void {
    const code = error.code < 0 ? error.code : ErrorCode.InternalError;
    this.answer(jsonRpcError(null, code, error.message, error.data ?? undefined));
  }

  /** Plain MCP has no goodbye message; the adapter's close frame (1001) says it. */
  shutdown(): Promise<void> {
    return this.dispose();
  }

  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    this.heartbeat.stop();
    await this.server.close();
  }

  private answer(response: JsonRpcErrorResponse): void {
    if (this.socket.readyState === WebSocket.OPEN) this.socket.send(JSON.stringify(response));
  }
}
