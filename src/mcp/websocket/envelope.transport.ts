import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { WebSocket } from 'ws';
import { Envelope } from './envelope';
import { SocketTransport } from './socket-transport';

/** JSON-RPC inside the spec's `message` envelope: the gateway unwraps `payload`, this wraps it. */
export class EnvelopeTransport extends SocketTransport {
  constructor(
    socket: WebSocket,
    override readonly sessionId: string,
  ) {
    super(socket, sessionId);
  }

  protected frame(message: JSONRPCMessage): string {
    return JSON.stringify(Envelope.message(this.sessionId, message));
  }
}
