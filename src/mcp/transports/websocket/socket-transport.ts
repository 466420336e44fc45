import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { compileFrameSchema } from '../../../core/validation/frame-schema';
import { jsonRpcMessageSchema } from '../../dto/json-rpc.dto';
import { unrepresentableIdProblem } from '../../mcp.errors';

const isJsonRpcMessage = compileFrameSchema(jsonRpcMessageSchema);

/** What a transport needs of its connection: a way to send a frame. */
export interface FrameSender {
  /** False when the frame could not be sent (the connection is closing). */
  send(frame: string): boolean;
}

/** Takes a message before the 2025 session's server sees it (`SocketRevisions`: the 2026 server, the direct path); false leaves it to that server. */
export interface MessageTaker {
  take(message: JSONRPCMessage): boolean;
  /** The connection's channel closed: whatever was taken and is still running stops. */
  stopAll(): void;
}

/**
 * The SDK `Transport` over one gateway WebSocket connection, leaving the wire format to
 * subclasses (the spec's envelope, or plain frames). Frames reach it through the gateway
 * ({@link deliver}), which owns the connection: closing the transport ends the JSON-RPC channel
 * (the SDK server lets go of pending requests), and the session closes the connection itself.
 * A message may be taken by another binder before the SDK server sees it ({@link takeMessagesWith}).
 */
export abstract class SocketTransport implements Transport {
  onclose?: Transport['onclose'];
  onerror?: Transport['onerror'];
  onmessage?: Transport['onmessage'];
  private closed = false;
  private taker?: MessageTaker;

  constructor(
    protected readonly connection: FrameSender,
    readonly sessionId?: string,
  ) {}

  async start(): Promise<void> {}

  /** Offers every message to `taker` before the SDK server. */
  takeMessagesWith(taker: MessageTaker): void {
    this.taker = taker;
  }

  async send(message: JSONRPCMessage): Promise<void> {
    if (this.closed || !this.connection.send(this.frame(message))) throw new Error('MCP connection is closed');
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.taker?.stopAll();
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
    if (!this.taker?.take(message)) this.onmessage?.(message);
    return undefined;
  }

  /** One outgoing JSON-RPC message as the text of one frame. */
  protected abstract frame(message: JSONRPCMessage): string;
}
