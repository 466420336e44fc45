import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { ToolCallScope } from '../../../core/tools/tool-call-scope';
import { DirectBinder } from '../../revisions/direct-binder';
import { PLAIN_CALL_2025 } from '../../revisions/2025/plain-call';
import type { McpSessionContext } from './mcp-socket-session';
import { ModernSocketRequests } from './modern-socket-requests';
import type { MessageTaker, SocketTransport } from './socket-transport';

/**
 * One MCP WebSocket connection (plain or the envelope), served in whichever revision each message
 * speaks: a message that carries the 2026 envelope goes to the connection's server of that
 * revision ({@link ModernSocketRequests}), a plain 2025 `tools/call` to the direct binder, and
 * everything else to the connection's 2025 session, an SDK 1.x server bound by `Sdk1Binder`.
 */
export class SocketRevisions implements MessageTaker {
  private readonly modern: ModernSocketRequests;
  private readonly direct: DirectBinder;
  private readonly session: Server;

  constructor(transport: SocketTransport, scope: ToolCallScope, context: McpSessionContext) {
    const send = (message: JSONRPCMessage) => void transport.send(message).catch(() => undefined);
    this.modern = new ModernSocketRequests(context.sdk2, context.methods, scope, context.maxCallsInFlight, send);
    this.direct = new DirectBinder(context.methods, scope, send, PLAIN_CALL_2025);
    this.session = context.sdk1.createServer(scope);
    transport.takeMessagesWith(this);
    void this.session.connect(transport);
  }

  take(message: JSONRPCMessage): boolean {
    return this.modern.take(message) || this.direct.take(message);
  }

  stopAll(): void {
    this.direct.stopAll();
    this.modern.stopAll();
  }

  /** The connection ended: its 2025 session closes, which closes the transport and stops everything taken here. */
  close(): Promise<void> {
    return this.session.close();
  }
}
