import type { MaybePromise } from '../core/maybe-promise';
import { Inject, Logger } from '@nestjs/common';
import { GATEWAY_CONFIG, GatewayConfig } from '../config/gateway-config';
import { MessageAuthenticator } from '../core/auth/message-authenticator';
import { DrainService } from '../core/lifecycle/drain.service';
import type { GatewayConnection } from '../core/ws/connection';
import { ConnectionRegistry } from '../core/ws/connection-registry';
import { FrameEvent, MalformedFrame, OversizedFrame } from '../core/ws/frame-parser';
import { OnFrame } from '../core/ws/on-frame.decorator';
import { ProtocolGateway, ProtocolGatewayHooks } from '../core/ws/protocol-gateway.decorator';
import { AuthEnvelope, CloseEnvelope, closeEnvelopeSchema, MessageEnvelope, messageEnvelopeSchema, PongEnvelope, pongEnvelopeSchema } from './dto/mcp.dto';
import { McpAuthGuard } from './mcp-auth.guard';
import { McpEnabledGuard } from './mcp-enabled.guard';
import { MCP_PATH, MCP_PROTOCOL, PLAIN_MCP_SUBPROTOCOL } from './mcp.constants';
import { toEnvelopeError } from './mcp.errors';
import { McpMethods } from './methods/mcp-methods';
import { Sdk1Binder } from './revisions/2025/sdk1-binder';
import { Sdk2Binder } from './revisions/2026/sdk2-binder';
import { EnvelopeSession } from './transports/envelope/envelope-session';
import type { McpSessionContext, McpSocketSession } from './transports/websocket/mcp-socket-session';
import { McpHeartbeatInterceptor } from './transports/websocket/mcp-heartbeat.interceptor';
import { PlainSession } from './transports/websocket/plain-session';

type McpConnection = GatewayConnection<McpSocketSession>;
type EnvelopeConnection = GatewayConnection<EnvelopeSession>;
type PlainConnection = GatewayConnection<PlainSession>;

const plain = { subprotocol: PLAIN_MCP_SUBPROTOCOL } as const;

/**
 * MCP over WebSocket at `/mcp` (and on the dedicated listener, `MCP_WS_PORT`), each connection
 * served in whichever revision its messages speak (`transports/websocket/socket-revisions.ts`). A client that offers the `mcp` subprotocol speaks
 * plain JSON-RPC frames and shows its token at the upgrade: every frame it sends is a JSON-RPC
 * message, whatever `type` it may carry. Any other client speaks the spec's envelope: `auth`
 * first, then `message`, `pong` and `close`. Failures are told in the connection's vocabulary
 * (an `error` envelope, or a JSON-RPC error).
 */
@ProtocolGateway({
  protocol: MCP_PROTOCOL,
  path: MCP_PATH,
  upgradeGuards: [McpEnabledGuard, McpAuthGuard],
  connectionCap: { setting: 'MCP_WS_MAX_CONNECTIONS', limit: (config) => config.mcp.ws.maxConnections, status: 429, label: 'MCP' },
  authByMessage: { setting: 'MCP_WS_AUTH_TIMEOUT', timeoutMs: (config) => config.mcp.ws.authTimeoutMs },
  heartbeat: McpHeartbeatInterceptor,
  handleProtocols: (protocols) => (protocols.has(PLAIN_MCP_SUBPROTOCOL) ? PLAIN_MCP_SUBPROTOCOL : false),
  oversizedFrames: 'answer',
})
export class McpGateway implements ProtocolGatewayHooks<McpSocketSession> {
  private readonly context: McpSessionContext;

  constructor(
    @Inject(GATEWAY_CONFIG) config: GatewayConfig,
    auth: MessageAuthenticator,
    methods: McpMethods,
    sdk1: Sdk1Binder,
    sdk2: Sdk2Binder,
    connections: ConnectionRegistry,
    drain: DrainService,
  ) {
    this.context = { auth, methods, sdk1, sdk2, maxCallsInFlight: config.connections.maxCallsInFlight, settings: config.mcp.ws, logger: new Logger('MCP') };
    // Once the calls in flight are answered, sessions say goodbye (an envelope `close`) before the adapter closes their sockets.
    drain.afterDrain('mcp_websocket', async () => {
      await Promise.all(connections.list<McpSocketSession>(MCP_PROTOCOL).map((connection) => connection.state.shutdown()));
    });
  }

  onOpen(connection: McpConnection): void {
    connection.state =
      connection.subprotocol === PLAIN_MCP_SUBPROTOCOL ? new PlainSession(connection, this.context) : new EnvelopeSession(connection, this.context);
  }

  onClose(connection: McpConnection): void {
    void connection.state.dispose();
  }

  onAuthTimeout(connection: EnvelopeConnection, timeoutMs: number): void {
    connection.state.authTimedOut(timeoutMs);
  }

  @OnFrame('auth', { beforeAuth: true })
  authenticate(frame: AuthEnvelope, connection: EnvelopeConnection): MaybePromise<void> {
    return connection.state.authenticate(frame);
  }

  @OnFrame('message', { schema: messageEnvelopeSchema })
  message(frame: MessageEnvelope, connection: EnvelopeConnection): void {
    connection.state.receive(frame);
  }

  @OnFrame('pong', { schema: pongEnvelopeSchema })
  pong(frame: PongEnvelope, connection: EnvelopeConnection): void {
    connection.state.pong(frame);
  }

  @OnFrame('close', { schema: closeEnvelopeSchema })
  close(frame: CloseEnvelope, connection: EnvelopeConnection): void {
    connection.state.close(frame);
  }

  @OnFrame(FrameEvent.UNTYPED, plain)
  jsonRpc(message: unknown, connection: PlainConnection): void {
    connection.state.deliver(message);
  }

  /** A JSON-RPC message that happens to have a `type` field is still a JSON-RPC message. */
  @OnFrame(FrameEvent.UNKNOWN_TYPE, plain)
  typedJsonRpc(message: unknown, connection: PlainConnection): void {
    connection.state.deliver(message);
  }

  @OnFrame(FrameEvent.MALFORMED, plain)
  unreadable(frame: MalformedFrame, connection: PlainConnection): void {
    connection.state.unreadable(frame.reason);
  }

  @OnFrame(FrameEvent.TOO_LARGE, plain)
  tooLarge(frame: OversizedFrame, connection: PlainConnection): void {
    connection.state.tooLarge(frame.bytes, frame.limit);
  }

  onFrameError(error: unknown, _frame: unknown, connection: McpConnection): void {
    connection.state.reportError(toEnvelopeError(error));
  }
}
