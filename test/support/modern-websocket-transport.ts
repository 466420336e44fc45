import type { JSONRPCMessage, Transport } from '@modelcontextprotocol/client';
import WebSocket from 'ws';

/**
 * A transport of the SDK 2.x client over one WebSocket (plain MCP frames, subprotocol `mcp`,
 * token in the URL): the 2.x SDK ships none, and the gateway's WebSocket routes serve the
 * 2026-07-28 revision beside the 2025 ones.
 */
export class ModernWebSocketTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: Transport['onmessage'];
  private socket?: WebSocket;

  constructor(private readonly url: string) {}

  start(): Promise<void> {
    return new Promise((resolve, reject) => {
      const socket = new WebSocket(this.url, ['mcp']);
      socket.once('open', () => resolve());
      socket.once('error', reject);
      socket.on('message', (data) => this.onmessage?.(JSON.parse(String(data)) as JSONRPCMessage));
      socket.on('close', () => this.onclose?.());
      this.socket = socket;
    });
  }

  async send(message: JSONRPCMessage): Promise<void> {
    this.socket!.send(JSON.stringify(message));
  }

  async close(): Promise<void> {
    this.socket?.close();
  }
}
