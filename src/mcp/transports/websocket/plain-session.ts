import { ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import { ToolCallScope } from '../../../core/tools/tool-call-scope';
import type { GatewayConnection } from '../../../core/ws/connection';
import { jsonRpcError, requestIdOf } from '../../mcp.errors';
import type { EnvelopeError } from '../../mcp.frames';
import type { McpSessionContext, McpSocketSession } from './mcp-socket-session';
import { PlainFrameTransport } from './plain-frame.transport';
import { SocketRevisions } from './socket-revisions';

/**
 * One plain MCP connection (subprotocol `mcp`): authenticated at the upgrade, one JSON-RPC
 * message per text frame to and from an SDK server of its own. Plain MCP has no heartbeat
 * message, so liveness uses WebSocket ping frames, which every client answers by itself, on the
 * same interval and timeout as the envelope's (see `McpHeartbeatInterceptor`).
 */
export class PlainSession implements McpSocketSession {
  private readonly transport: PlainFrameTransport;
  private readonly revisions: SocketRevisions;
  private disposed = false;

  constructor(
    private readonly connection: GatewayConnection,
    context: McpSessionContext,
  ) {
    this.transport = new PlainFrameTransport(connection);
    this.revisions = new SocketRevisions(this.transport, ToolCallScope.ofConnection(connection), context);
  }

  /** Plain MCP has no goodbye message: a silent peer's socket is cut off. */
  heartbeatTimedOut(): void {
    this.connection.socket.terminate();
    void this.dispose();
  }

  /** Anything that is not a JSON-RPC message is answered with a JSON-RPC error response. */
  deliver(payload: unknown): void {
    const problem = this.transport.deliver(payload);
    if (problem) this.connection.send(jsonRpcError(requestIdOf(payload), ErrorCode.InvalidRequest, 'Invalid Request', `Message is ${problem}`));
  }

  /** Text that is not JSON: JSON-RPC's parse error. */
  unreadable(reason: string): void {
    this.connection.send(jsonRpcError(null, ErrorCode.ParseError, 'Parse error', reason));
  }

  /** A message over the size limit: an invalid request. */
  tooLarge(bytes: number, limit: number): void {
    this.connection.send(jsonRpcError(null, ErrorCode.InvalidRequest, 'Invalid Request', `Message of ${bytes} bytes is over the ${limit}-byte limit`));
  }

  /** JSON-RPC codes stay; the envelope's own codes are internal errors here. */
  reportError(error: EnvelopeError): void {
    const code = error.code < 0 ? error.code : ErrorCode.InternalError;
    this.connection.send(jsonRpcError(null, code, error.message, error.data ?? undefined));
  }

  /** Plain MCP has no goodbye message; the adapter's close frame (1001) says it. */
  shutdown(): Promise<void> {
    return this.dispose();
  }

  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    await this.revisions.close();
  }
}
