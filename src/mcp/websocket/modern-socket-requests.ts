import { CallToolResult, Implementation, JSONRPCMessage, RequestId } from '@modelcontextprotocol/sdk/types.js';
import { SERVER_INFO_META_KEY, Transport as ModernTransport } from '@modelcontextprotocol/server';
import type { ToolDefinition } from '../../core/tools/tool-definition';
import type { ToolCallScope } from '../../core/tools/tool-call-scope';
import { ModernMcpEndpoint, modernEnvelopeOf, unsupportedRevisionOf } from '../http/modern-mcp-endpoint';
import { jsonRpcError, RATE_LIMITED_ERROR } from '../mcp.errors';
import type { McpService } from '../mcp.service';
import { DirectToolCalls, PlainCallForm, plainToolCall, talksToCaller, ToolCallRequest } from './direct-tool-calls';

/**
 * The 2026-07-28 messages of one MCP WebSocket connection: each message that carries the
 * revision's `_meta` envelope goes to the connection's own 2026 server
 * ({@link ModernMcpEndpoint.serveConnection}, made at the first such message), and every message
 * it answers goes back as a frame; a `notifications/cancelled` naming one of its requests stops
 * it (a `subscriptions/listen` runs until then, or until the connection ends). A message that names
 * another revision is refused here, as the HTTP handler refuses it. Other messages are
 * the connection's 2025 session's. At most `maxInFlight` requests are open at once.
 *
 * A plain `tools/call` ({@link ModernPlainCall}) is answered from the catalogue directly, as the
 * 2025 sessions' are ({@link DirectToolCalls}): the SDK server's per-request work costs several
 * times the call.
 */
export class ModernSocketRequests {
  /** Requests handed to the server and not answered yet. */
  private readonly open = new Set<RequestId>();
  private wire?: ConnectionWire;
  private served?: { close(): Promise<void> };
  private readonly plainCall: ModernPlainCall;
  private readonly direct: DirectToolCalls;

  constructor(
    private readonly endpoint: ModernMcpEndpoint,
    mcp: McpService,
    private readonly scope: ToolCallScope,
    private readonly maxInFlight: number,
    private readonly send: (message: JSONRPCMessage) => void,
  ) {
    this.plainCall = new ModernPlainCall(mcp.info);
    this.direct = new DirectToolCalls(mcp, scope, send, this.plainCall);
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
    this.served = this.endpoint.serveConnection(this.scope, this.wire, this.maxInFlight);
    return this.wire;
  }
}

/**
 * The 2026-07-28 revision's plain `tools/call` on one connection: its params are a name, an
 * arguments object and a `_meta` that is exactly an envelope the connection's server has
 * answered with a result before (so nothing in it asks for more than that envelope did: no
 * progress token, no trace context, nothing the SDK would refuse), and its tool neither talks to
 * its caller nor runs as a task (the client's capabilities decide both). Clients send the same
 * envelope with every request, so after the first answer their calls take this path. The result
 * is stamped as the SDK stamps every 2026 result: `resultType: "complete"`, the server's identity
 * in `_meta`.
 */
class ModernPlainCall implements PlainCallForm {
  /** The envelope (its JSON) of a request the server answered with a result. */
  private accepted?: string;
  /** The envelopes of the requests the server has not answered yet, while none is accepted. */
  private readonly handed = new Map<RequestId, string>();

  /** The `_meta` of a result that has none of its own: shared, as results are only serialized. */
  private readonly identity: Record<string, unknown>;

  constructor(private readonly serverInfo: Implementation) {
    this.identity = { [SERVER_INFO_META_KEY]: serverInfo };
  }

  handedToServer(id: RequestId, envelope: Record<string, unknown>): void {
    if (this.accepted === undefined) this.handed.set(id, JSON.stringify(envelope));
  }

  answered(id: RequestId, withResult: boolean): void {
    const envelope = this.handed.get(id);
    if (envelope === undefined) return;
    this.handed.delete(id);
    if (withResult) {
      this.accepted = envelope;
      this.handed.clear();
    }
  }

  callOf(message: JSONRPCMessage): ToolCallRequest | undefined {
    if (this.accepted === undefined) return undefined;
    const call = plainToolCall(message);
    return call && JSON.stringify(call.meta) === this.accepted ? call : undefined;
  }

  resultOf(result: CallToolResult): CallToolResult {
    const _meta = result._meta === undefined ? this.identity : { ...result._meta, [SERVER_INFO_META_KEY]: this.serverInfo };
    return { ...result, resultType: 'complete', _meta };
  }

  takes(tool: ToolDefinition): boolean {
    return !talksToCaller(tool) && !tool.longRunning;
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
