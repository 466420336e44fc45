import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { JSONRPCMessage, JSONRPCMessageSchema } from '@modelcontextprotocol/sdk/types.js';

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
 */
export abstract class SocketTransport implements Transport {
  onclose?: Transport['onclose'];
  onerror?: Transport['onerror'];
  onmessage?: Transport['onmessage'];
  private closed = false;

  constructor(
    protected readonly connection: FrameSender,
    readonly sessionId?: string,
  ) {}

  async start(): Promise<void> {}

  async send(message: JSONRPCMessage): Promise<void> {
    if (this.closed || !this.connection.send(this.frame(message))) throw new Error('MCP connection is closed');
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.onclose?.();
  }

  /**
   * Hands a received value to the SDK server when it is a JSON-RPC 2.0 message; otherwise
   * returns why it is not, for the session to answer in its own vocabulary. Once closed, drops it.
   */
  deliver(value: unknown): string | undefined {
    if (this.closed) return undefined;
    const parsed = JSONRPCMessageSchema.safeParse(value);
    if (!parsed.success) {
      return 'not a JSON-RPC 2.0 request, notification or response ({"jsonrpc": "2.0", "method" or "result"/"error", ...})';
    }
    this.onmessage?.(parsed.data);
    return undefined;
  }

  /** One outgoing JSON-RPC message as the text of one frame. */
  protected abstract frame(message: JSONRPCMessage): string;
}
