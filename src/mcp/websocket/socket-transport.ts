import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { compileFrameSchema } from '../../core/validation/frame-schema';
import { jsonRpcMessageSchema } from '../dto/json-rpc.dto';
import { unrepresentableIdProblem } from '../mcp.errors';
import type { DirectToolCalls } from './direct-tool-calls';
import type { ModernSocketRequests } from './modern-socket-requests';

const isJsonRpcMessage = compileFrameSchema(jsonRpcMessageSchema);

/** What a transport needs of its connection: a way to send a frame. */
export interface FrameSender {
  /** False when the frame could not be sent (the connection is closing). */
  send(frame: string): boolean;
}

/**
 * The SDK `Transport` over one gateway WebSocket connection, leaving the wire format to
 * subclasses (the spec's envelope, or plain frames). Frames reach it through the gateway
 * ({@link deliver}), which owns the connection: closing the transport ends the JSON-RPC channel
 * (the SDK server lets go of pending requests), and the session closes the connection itself.
 * Plain `tools/call` requests may be answered before the SDK server sees them ({@link DirectToolCalls}).
 */
export abstract class SocketTransport implements Transport {
  onclose?: Transport['onclose'];
  onerror?: Transport['onerror'];
  onmessage?: Transport['onmessage'];
  private closed = false;
  private direct?: DirectToolCalls;
  private modern?: ModernSocketRequests;

  constructor(
    protected readonly connection: FrameSender,
    readonly sessionId?: string,
  ) {}

  async start(): Promise<void> {}

  /** Answers plain `tools/call` requests through `direct` rather than the SDK server. */
  answerToolCallsWith(direct: DirectToolCalls): void {
    this.direct = direct;
  }

  /** Answers the messages of the 2026-07-28 revision through `modern` rather than the 2025 session's SDK server. */
  answerModernRequestsWith(modern: ModernSocketRequests): void {
    this.modern = modern;
  }

  async send(message: JSONRPCMessage): Promise<void> {
    if (this.closed || !this.connection.send(this.frame(message))) throw new Error('MCP connection is closed');
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.direct?.stopAll();
    this.modern?.stopAll();
    this.onclose?.();
  }

  /**
   * Hands a received value to the SDK server when it is a JSON-RPC 2.0 message; otherwise
   * returns why it is not, for the session to answer in its own vocabulary. Once closed, drops it.
   */
  deliver(value: unknown): string | undefined {
    if (this.closed) return undefined;
    if (isJsonRpcMessage(value) !== undefined) {
      return unrepresentableIdProblem(value) ?? 'not a JSON-RPC 2.0 request, notification or response ({"jsonrpc": "2.0", "method" or "result"/"error", ...})';
    }
    const message = value as JSONRPCMessage;
    if (!this.modern?.take(message) && !this.direct?.take(message)) this.onmessage?.(message);
    return undefined;
  }

  /** One outgoing JSON-RPC message as the text of one frame. */
  protected abstract frame(message: JSONRPCMessage): string;
}
