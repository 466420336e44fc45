import { BeforeApplicationShutdown, Inject, Injectable, Logger } from '@nestjs/common';
import { WebSocket } from 'ws';
import { GATEWAY_CONFIG, GatewayConfig } from '../../config/gateway-config';
import { AccessTokenService } from '../../core/auth/access-token.service';
import { connectionOf } from '../../core/ws/gateway-connection';
import { McpServerFactory } from '../mcp-server.factory';
import { PLAIN_MCP_SUBPROTOCOL } from '../mcp.constants';
import { Envelope, EnvelopeError, EnvelopeErrorCode } from './envelope';
import { EnvelopeSession } from './envelope-session';
import type { McpSessionContext, McpSocketSession } from './mcp-socket-session';
import { PlainSession } from './plain-session';

/**
 * The MCP WebSocket sessions, one per open socket: a plain session when the client chose the
 * `mcp` subprotocol, the spec's envelope otherwise. Sessions are dropped and closed with their
 * socket, and told to say goodbye when the gateway shuts down.
 */
@Injectable()
export class McpSocketSessions implements BeforeApplicationShutdown {
  private readonly sessions = new Map<WebSocket, McpSocketSession>();
  private readonly context: McpSessionContext;

  constructor(@Inject(GATEWAY_CONFIG) config: GatewayConfig, tokens: AccessTokenService, servers: McpServerFactory) {
    this.context = { tokens, servers, settings: config.mcp.ws, logger: new Logger('MCP') };
  }

  get size(): number {
    return this.sessions.size;
  }

  open(socket: WebSocket): void {
    const connection = connectionOf(socket);
    if (socket.protocol === PLAIN_MCP_SUBPROTOCOL) {
      const session = new PlainSession(socket, connection, this.context);
      // Every frame is a JSON-RPC message for the transport, whatever `type` it may carry.
      connection.receiveFrame = (frame) => session.receive(frame.event, frame.data);
      this.sessions.set(socket, session);
    } else {
      this.sessions.set(socket, new EnvelopeSession(socket, connection, this.context));
    }
  }

  async closed(socket: WebSocket): Promise<void> {
    const session = this.sessions.get(socket);
    this.sessions.delete(socket);
    await session?.dispose();
  }

  /** The envelope session of `socket`; gone only once shutdown has begun. */
  envelope(socket: WebSocket): EnvelopeSession {
    const session = this.sessions.get(socket);
    if (session instanceof EnvelopeSession) return session;
    throw new EnvelopeError(EnvelopeErrorCode.UNAVAILABLE, 'Server is shutting down');
  }

  /** Tells the client of `socket` about a failure, in its session's vocabulary (an envelope once the session is gone). */
  reportError(socket: WebSocket, error: EnvelopeError): void {
    const session = this.sessions.get(socket);
    if (session) session.reportError(error);
    else if (socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(Envelope.error(error)));
  }

  /** Sessions stay registered while they say goodbye, so that the clients' answers reach them. */
  async beforeApplicationShutdown(): Promise<void> {
    await Promise.all([...this.sessions.values()].map((session) => session.shutdown()));
    this.sessions.clear();
  }
}
