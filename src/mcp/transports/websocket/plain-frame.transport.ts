import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { SocketTransport } from './socket-transport';

/** One JSON-RPC message per text frame, no envelope: what the SDK's `WebSocketClientTransport` speaks. */
export class PlainFrameTransport extends SocketTransport {
  protected frame(message: JSONRPCMessage): string {
    return JSON.stringify(message);
  }
}
