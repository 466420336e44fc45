import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { randomUUID } from 'crypto';
import type { GatewayConnection } from '../../core/ws/connection';
import type { AuthEnvelope, ClientEnvelope, MessageEnvelope } from '../dto/mcp.dto';
import { MCP_REALM } from '../mcp.constants';
import { Envelope, EnvelopeCloseCode, EnvelopeError, EnvelopeErrorCode, ServerEnvelope } from '../mcp.frames';
import { DirectToolCalls } from './direct-tool-calls';
import { EnvelopeTransport } from './envelope.transport';
import type { McpSessionContext, McpSocketSession } from './mcp-socket-session';
import { CLOSE_TRY_AGAIN_LATER } from '../../core/ws/connection';

/** How long a client has to answer the server's `close` at shutdown. */
const CLOSE_ANSWER_GRACE_MS = 1000;

type State = 'authenticating' | 'open' | 'closing' | 'ended';

/**
 * One connection of the spec's envelope protocol (mcp-over-websocket.md, section 3): `auth`
 * first within `MCP_WS_AUTH_TIMEOUT`, then JSON-RPC in `message` envelopes to and from an SDK
 * server of its own, a `ping` every heartbeat interval, and `close` either way. The session
 * writes every envelope itself, so the auth answer always precedes the first message.
 */
export class EnvelopeSession implements McpSocketSession {
  readonly sessionId = `ws-session-${randomUUID()}`;
  private state: State = 'authenticating';
  private readonly authDeadline: NodeJS.Timeout;
  private transport?: EnvelopeTransport;
  private server?: Server;
  private disposed = false;

  constructor(
    private readonly connection: GatewayConnection,
    private readonly context: McpSessionContext,
  ) {
    const { authTimeoutMs } = context.settings;
    this.authDeadline = setTimeout(() => {
      this.reportError(new EnvelopeError(EnvelopeErrorCode.AUTH_TIMEOUT, `Authentication timeout: no auth message within ${authTimeoutMs} ms`));
      this.end(EnvelopeCloseCode.TIMEOUT, 'Authentication timeout');
    }, authTimeoutMs);
    this.authDeadline.unref();
  }

  /** `auth`: on success the session opens; on any failure the client hears why and is closed. */
  authenticate(frame: AuthEnvelope): void {
    if (this.state !== 'authenticating') {
      throw new EnvelopeError(EnvelopeErrorCode.BAD_MESSAGE, 'Already authenticated', `this connection is session ${this.sessionId}`);
    }
    const result = this.context.tokens.authenticate(typeof frame.token === 'string' ? frame.token : undefined, MCP_REALM);
    if (!result.ok) {
      this.send(Envelope.authFailed(result.status === 401 ? 'Authentication requires a token' : 'Invalid authentication token'));
      return this.end(EnvelopeCloseCode.UNAUTHORIZED, 'Authentication failed');
    }
    const denied = this.context.admission?.(result.principal);
    if (denied) {
      this.send(Envelope.authFailed(denied.reason));
      return this.end(EnvelopeCloseCode.UNAUTHORIZED, 'Authentication failed');
    }
    clearTimeout(this.authDeadline);
    const refusal = this.connection.authenticate(result.principal);
    if (refusal !== undefined) {
      this.send(Envelope.authFailed(refusal));
      return this.end(CLOSE_TRY_AGAIN_LATER, 'Too many connections');
    }
    this.state = 'open';
    const { heartbeatIntervalMs, heartbeatTimeoutMs } = this.context.settings;
    this.send(Envelope.authenticated(this.sessionId, this.context.mcp.info, heartbeatIntervalMs));
    const caller = { principal: result.principal, connectionId: this.connection.id, callsInFlight: this.connection.callsInFlight };
    const transport = new EnvelopeTransport(this.connection, this.sessionId);
    transport.answerToolCallsWith(new DirectToolCalls(this.context.mcp, caller, (message) => void transport.send(message).catch(() => undefined)));
    this.transport = transport;
    this.server = this.context.mcp.createServer(caller);
    void this.server.connect(transport);
    this.connection.keepAlive({
      intervalMs: heartbeatIntervalMs,
      timeoutMs: heartbeatTimeoutMs,
      ping: () => this.send(Envelope.ping(this.sessionId)),
      onTimeout: () => {
        this.send(Envelope.close(this.sessionId, `Heartbeat timeout: no pong within ${heartbeatTimeoutMs} ms`));
        this.end(EnvelopeCloseCode.TIMEOUT, 'Heartbeat timeout');
      },
    });
    this.context.logger.debug?.(`MCP session ${this.sessionId} authenticated (client ${JSON.stringify(frame.clientInfo ?? null)})`);
  }

  /** `message`: the payload goes to the SDK server, which answers through the transport. */
  receive(frame: MessageEnvelope): void {
    this.checkSessionId(frame);
    this.deliver(frame.payload);
  }

  deliver(payload: unknown): void {
    const problem = this.transport!.deliver(payload);
    if (problem) throw new EnvelopeError(EnvelopeErrorCode.INVALID_REQUEST, 'Invalid Request', `payload is ${problem}`);
  }

  /** `pong`: the client is alive (every frame says so; a `pong` says nothing more). */
  pong(frame: ClientEnvelope): void {
    this.checkSessionId(frame);
  }

  /** `close`: answered with `close`, then the connection ends normally. Also the client's answer to the server's `close`. */
  close(frame: ClientEnvelope): void {
    this.checkSessionId(frame);
    if (this.state === 'open') this.send(Envelope.close(this.sessionId, "Session closed at the client's request"));
    this.end(EnvelopeCloseCode.NORMAL, 'Session closed');
  }

  reportError(error: EnvelopeError): void {
    this.send(Envelope.error(error, this.state === 'authenticating' ? undefined : this.sessionId));
    if (error.code === EnvelopeErrorCode.UNAUTHORIZED) this.end(EnvelopeCloseCode.UNAUTHORIZED, error.message);
  }

  /** Sends `close` and gives the client a moment to answer it before the server closes the socket. */
  async shutdown(): Promise<void> {
    if (this.state === 'open') {
      this.state = 'closing';
      this.send(Envelope.close(this.sessionId, 'Server shutting down'));
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, CLOSE_ANSWER_GRACE_MS);
        this.connection.onClose(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    await this.dispose();
  }

  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    clearTimeout(this.authDeadline);
    await this.server?.close();
  }

  private checkSessionId(frame: ClientEnvelope): void {
    if (frame.sessionId !== undefined && frame.sessionId !== this.sessionId) {
      throw new EnvelopeError(
        EnvelopeErrorCode.FORBIDDEN,
        'Session does not belong to this connection',
        `sessionId ${JSON.stringify(frame.sessionId)} is not ${this.sessionId}`,
      );
    }
  }

  private send(envelope: ServerEnvelope): void {
    this.connection.send(envelope);
  }

  /** Closes the connection (any envelope sent before still goes out first) and the session with it. */
  private end(code: number, reason: string): void {
    this.state = 'ended';
    this.connection.close(code, reason);
    void this.dispose();
  }
}
