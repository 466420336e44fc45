import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { Envelope } from '../../mcp.frames';
import { FrameSender, SocketTransport } from '../websocket/socket-transport';

/** JSON-RPC inside the spec's `message` envelope: the gateway unwraps `payload`, this wraps it. */
export class EnvelopeTransport extends SocketTransport {
  constructor(
    connection: FrameSender,
    override readonly sessionId: string,
  ) {
    super(connection, sessionId);
  }

  protected frame(message: JSONRPCMessage): string {
    return JSON.stringify(Envelope.message(this.sessionId, message));
  }
}
