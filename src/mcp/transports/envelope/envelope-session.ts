import { newId } from '../../../core/new-id';
import { ToolCallScope } from '../../../core/tools/tool-call-scope';
import type { GatewayConnection } from '../../../core/ws/connection';
import type { AuthEnvelope, ClientEnvelope, MessageEnvelope } from '../../dto/mcp.dto';
import { MCP_REALM } from '../../mcp.constants';
import { Envelope, EnvelopeCloseCode, EnvelopeError, EnvelopeErrorCode, ServerEnvelope } from '../../mcp.frames';
import { EnvelopeTransport } from './envelope.transport';
import type { McpSessionContext, McpSocketSession } from '../websocket/mcp-socket-session';
import { SocketRevisions } from '../websocket/socket-revisions';
import { CLOSE_TRY_AGAIN_LATER } from '../../../core/ws/connection';
import { isPromise, type MaybePromise } from '../../../core/maybe-promise';
import type { MessageAuthentication } from '../../../core/auth/message-authenticator';

/** How long a client has to answer the server's `close` at shutdown. */
const CLOSE_ANSWER_GRACE_MS = 1000;

type State = 'authenticating' | 'open' | 'closing' | 'ended';

/**
 * One connection of the spec's envelope protocol (mcp-over-websocket.md, section 3): `auth`
 * first within `MCP_WS_AUTH_TIMEOUT` (the route's deadline), then JSON-RPC in `message`
 * envelopes to and from an SDK server of its own, a `ping` every heartbeat interval (the route's
 * heartbeat, `McpHeartbeatInterceptor`), and `close` either way. The session
 * writes every envelope itself, so the auth answer always precedes the first message.
 */
export class EnvelopeSession implements McpSocketSession {
  readonly sessionId = `ws-session-${newId()}`;
  private state: State = 'authenticating';
  private transport?: EnvelopeTransport;
  private revisions?: SocketRevisions;
  private disposed = false;
  /** An auth envelope's token (a JWT) is being checked. */
  private checkingToken = false;

  constructor(
    private readonly connection: GatewayConnection,
    private readonly context: McpSessionContext,
  ) {}

  /** No `auth` within the route's deadline (`MCP_WS_AUTH_TIMEOUT`): the spec's `AUTH_TIMEOUT` error, then the close. */
  authTimedOut(timeoutMs: number): void {
    this.reportError(new EnvelopeError(EnvelopeErrorCode.AUTH_TIMEOUT, `Authentication timeout: no auth message within ${timeoutMs} ms`));
    this.end(EnvelopeCloseCode.TIMEOUT, 'Authentication timeout');
  }

  /** The heartbeat's `ping` envelope, once the session exists (before `auth`, the auth deadline watches the client). */
  ping(): void {
    if (this.state === 'open') this.send(Envelope.ping(this.sessionId));
  }

  heartbeatTimedOut(timeoutMs: number): void {
    this.send(Envelope.close(this.sessionId, `Heartbeat timeout: no pong within ${timeoutMs} ms`));
    this.end(EnvelopeCloseCode.TIMEOUT, 'Heartbeat timeout');
  }

  /** `auth`: on success the session opens; on any failure the client hears why and is closed. */
  authenticate(frame: AuthEnvelope): MaybePromise<void> {
    if (this.state !== 'authenticating') {
      throw new EnvelopeError(EnvelopeErrorCode.BAD_MESSAGE, 'Already authenticated', `this connection is session ${this.sessionId}`);
    }
    if (this.checkingToken) throw new EnvelopeError(EnvelopeErrorCode.BAD_MESSAGE, 'Already authenticating', 'wait for the answer to the first auth');
    const result = this.context.auth.authenticate(this.connection, frame.token, MCP_REALM);
    if (!isPromise(result)) return this.authenticated(frame, result);
    this.checkingToken = true;
    return result.then((settled) => {
      this.checkingToken = false;
      if (this.state === 'authenticating') this.authenticated(frame, settled);
    });
  }

  private authenticated(frame: AuthEnvelope, result: MessageAuthentication): void {
    if (!result.ok) {
      const words = { missing: 'Authentication requires a token', invalid: 'Invalid authentication token', forbidden: result.reason, full: result.reason };
      this.send(Envelope.authFailed(words[result.failure]));
      if (result.failure === 'full') return this.end(CLOSE_TRY_AGAIN_LATER, 'Too many connections');
      return this.end(EnvelopeCloseCode.UNAUTHORIZED, 'Authentication failed');
    }
    this.state = 'open';
    this.send(Envelope.authenticated(this.sessionId, this.context.methods.info, this.context.settings.heartbeatIntervalMs));
    this.transport = new EnvelopeTransport(this.connection, this.sessionId);
    this.revisions = new SocketRevisions(this.transport, ToolCallScope.ofConnection(this.connection), this.context);
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
    await this.revisions?.close();
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
