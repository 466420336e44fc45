import { UseFilters, UseGuards } from '@nestjs/common';
import { ConnectedSocket, MessageBody, OnGatewayConnection, OnGatewayDisconnect, SubscribeMessage } from '@nestjs/websockets';
import type { WebSocket } from 'ws';
import { FrameEvent, MalformedFrame, OversizedFrame } from '../core/ws/frame-parser';
import { ProtocolGateway } from '../core/ws/protocol-gateway.decorator';
import {
  AuthEnvelope,
  CloseEnvelopeDto,
  envelopeValidationPipe,
  MessageEnvelopeDto,
  PongEnvelopeDto,
} from './dto/envelope.dto';
import { McpAuthGuard } from './mcp-auth.guard';
import { McpConnectionLimitGuard } from './mcp-connection-limit.guard';
import { McpEnabledGuard } from './mcp-enabled.guard';
import { MCP_PATH, PLAIN_MCP_SUBPROTOCOL } from './mcp.constants';
import { CLIENT_ENVELOPE_TYPES, EnvelopeError, EnvelopeErrorCode } from './websocket/envelope';
import { McpSocketSessions } from './websocket/mcp-socket-sessions.service';
import { McpWsExceptionFilter } from './websocket/mcp-ws-exception.filter';

/**
 * MCP over WebSocket at `/mcp` (and on the dedicated listener, `MCP_WS_PORT`). A client that
 * offers the `mcp` subprotocol speaks plain JSON-RPC frames and shows its token at the upgrade;
 * its frames go straight to its session (`McpSocketSessions.open`), not through these handlers.
 * Any other client speaks the spec's envelope, routed here by its `type`: `auth` first, then
 * `message`, `pong` and `close`, each only once authenticated.
 * Failures are answered by `McpWsExceptionFilter` in the client's vocabulary.
 */
@ProtocolGateway({
  path: MCP_PATH,
  upgradeGuards: [McpEnabledGuard, McpAuthGuard, McpConnectionLimitGuard],
  handleProtocols: (protocols) => (protocols.has(PLAIN_MCP_SUBPROTOCOL) ? PLAIN_MCP_SUBPROTOCOL : false),
  oversizedFrames: 'answer',
})
@UseFilters(McpWsExceptionFilter)
export class McpGateway implements OnGatewayConnection, OnGatewayDisconnect {
  constructor(private readonly sessions: McpSocketSessions) {}

  handleConnection(socket: WebSocket): void {
    this.sessions.open(socket);
  }

  handleDisconnect(socket: WebSocket): Promise<void> {
    return this.sessions.closed(socket);
  }

  @SubscribeMessage('auth')
  authenticate(@ConnectedSocket() socket: WebSocket, @MessageBody() frame: AuthEnvelope): void {
    this.sessions.envelope(socket).authenticate(frame);
  }

  @SubscribeMessage('message')
  @UseGuards(McpAuthGuard)
  message(@ConnectedSocket() socket: WebSocket, @MessageBody(envelopeValidationPipe) frame: MessageEnvelopeDto): void {
    this.sessions.envelope(socket).receive(frame);
  }

  @SubscribeMessage('pong')
  @UseGuards(McpAuthGuard)
  pong(@ConnectedSocket() socket: WebSocket, @MessageBody(envelopeValidationPipe) frame: PongEnvelopeDto): void {
    this.sessions.envelope(socket).pong(frame);
  }

  @SubscribeMessage('close')
  @UseGuards(McpAuthGuard)
  close(@ConnectedSocket() socket: WebSocket, @MessageBody(envelopeValidationPipe) frame: CloseEnvelopeDto): void {
    this.sessions.envelope(socket).close(frame);
  }

  @SubscribeMessage(FrameEvent.MALFORMED)
  @UseGuards(McpAuthGuard)
  malformed(@MessageBody() frame: MalformedFrame): never {
    throw new EnvelopeError(EnvelopeErrorCode.PARSE_ERROR, 'Parse error', frame.reason);
  }

  @SubscribeMessage(FrameEvent.UNTYPED)
  @UseGuards(McpAuthGuard)
  untyped(): never {
    throw new EnvelopeError(EnvelopeErrorCode.INVALID_REQUEST, 'Invalid Request', 'an envelope is a JSON object with a string "type"');
  }

  @SubscribeMessage(FrameEvent.UNKNOWN_TYPE)
  @UseGuards(McpAuthGuard)
  unknownType(@MessageBody() frame: { type: string }): never {
    throw new EnvelopeError(
      EnvelopeErrorCode.INVALID_REQUEST,
      'Invalid Request',
      `unknown envelope type ${JSON.stringify(frame.type)}: a client sends ${CLIENT_ENVELOPE_TYPES.join(', ')}`,
    );
  }

  @SubscribeMessage(FrameEvent.TOO_LARGE)
  @UseGuards(McpAuthGuard)
  tooLarge(@MessageBody() frame: OversizedFrame): never {
    throw new EnvelopeError(EnvelopeErrorCode.BAD_MESSAGE, `Message of ${frame.bytes} bytes is over the ${frame.limit}-byte limit`);
  }
}
