import type { JSONRPCMessage, RequestId } from '@modelcontextprotocol/sdk/types.js';
import type { Transport as ModernTransport } from '@modelcontextprotocol/server';
import type { ToolCallScope } from '../../../core/tools/tool-call-scope';
import { jsonRpcError, RATE_LIMITED_ERROR } from '../../mcp.errors';
import type { McpMethods } from '../../methods/mcp-methods';
import { DirectBinder } from '../../revisions/direct-binder';
import { PlainCall2026 } from '../../revisions/2026/plain-call';
import { modernEnvelopeOf, unsupportedRevisionOf } from '../../revisions/2026/request-meta';
import type { Sdk2Binder, ServedConnection } from '../../revisions/2026/sdk2-binder';
import type { MessageTaker } from './socket-transport';

/**
 * The 2026-07-28 messages of one MCP WebSocket connection: each message that carries the
 * revision's `_meta` envelope goes to the connection's own server of that revision
 * ({@link Sdk2Binder.serveConnection}, made at the first such message), and every message it
 * answers goes back as a frame; a `notifications/cancelled` naming one of its requests stops it
 * (a `subscriptions/listen` runs until then, or until the connection ends). A message that names
 * another revision is refused here, as the HTTP handler refuses it. Other messages are the
 * connection's 2025 session's. At most `maxInFlight` requests are open at once.
 *
 * A plain `tools/call` ({@link PlainCall2026}) is answered by the direct binder, as the 2025
 * session's are: the SDK server's per-request work costs several times the call.
 */
export class ModernSocketRequests implements MessageTaker {
  /** Requests handed to the server and not answered yet. */
  private readonly open = new Set<RequestId>();
  private wire?: ConnectionWire;
  private served?: ServedConnection;
  private readonly plainCall: PlainCall2026;
  private readonly direct: DirectBinder;

  constructor(
    private readonly binder: Sdk2Binder,
    methods: McpMethods,
    private readonly scope: ToolCallScope,
    private readonly maxInFlight: number,
    private readonly send: (message: JSONRPCMessage) => void,
  ) {
    this.plainCall = new PlainCall2026(methods.info);
    this.direct = new DirectBinder(methods, scope, send, this.plainCall);
  }

  /** Whether `message` is this connection's 2026 traffic, now answered (or refused) here. */
  take(message: JSONRPCMessage): boolean {
    if ('method' in message && message.method === 'notifications/cancelled') {
      if (this.direct.take(message)) return true;
      const requestId = (message.params as { requestId?: RequestId } | undefined)?.requestId;
      if (requestId === undefined || !this.open.delete(requestId)) return false;
      this.wire!.receive(message);
      return true;
    }
    const envelope = 'method' in message ? modernEnvelopeOf(message) : undefined;
    if (envelope === undefined) return false;
    const id = 'id' in message ? (message.id as RequestId) : undefined;
    const unsupported = unsupportedRevisionOf(envelope);
    if (unsupported) {
      if (id !== undefined) this.send(jsonRpcError(id, unsupported.code, unsupported.message, unsupported.data) as JSONRPCMessage);
      return true;
    }
    if (this.direct.take(message)) return true;
    if (id !== undefined) {
      if (this.open.size >= this.maxInFlight && !this.open.has(id)) {
        const words = `Too many requests in flight on this connection: at most ${this.maxInFlight} (WS_MAX_CALLS_IN_FLIGHT)`;
        this.send(jsonRpcError(id, RATE_LIMITED_ERROR, words) as JSONRPCMessage);
        return true;
      }
      this.open.add(id);
      this.plainCall.handedToServer(id, envelope);
    }
    this.connectionWire().receive(message);
    return true;
  }

  /** The connection ended: the server stops, and with it every request it was answering. */
  stopAll(): void {
    this.direct.stopAll();
    this.open.clear();
    void this.served?.close();
  }

  private connectionWire(): ConnectionWire {
    if (this.wire) return this.wire;
    this.wire = new ConnectionWire((message) => {
      if (('result' in message || 'error' in message) && message.id !== undefined) {
        this.open.delete(message.id);
        this.plainCall.answered(message.id, 'result' in message);
      }
      this.send(message);
    });
    this.served = this.binder.serveConnection(this.scope, this.wire, this.maxInFlight);
    return this.wire;
  }
}

/**
 * The SDK 2.x `Transport` the connection's 2026 server is served over: what it sends becomes a
 * frame, what the connection receives for it is handed over. The connection itself belongs to
 * its session, so closing this closes nothing but the channel.
 */
class ConnectionWire implements ModernTransport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: ModernTransport['onmessage'];

  constructor(private readonly sendFrame: (message: JSONRPCMessage) => void) {}

  async start(): Promise<void> {}

  async send(message: Parameters<ModernTransport['send']>[0]): Promise<void> {
    this.sendFrame(message as JSONRPCMessage);
  }

  async close(): Promise<void> {
    this.onclose?.();
  }

  receive(message: JSONRPCMessage): void {
    this.onmessage?.(message as never);
  }
}
