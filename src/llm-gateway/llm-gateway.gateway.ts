import { Inject, Logger, UseFilters, UseGuards, UseInterceptors } from '@nestjs/common';
import { ConnectedSocket, MessageBody, OnGatewayConnection, OnGatewayDisconnect, SubscribeMessage } from '@nestjs/websockets';
import type { Observable } from 'rxjs';
import { WebSocket } from 'ws';
import { GATEWAY_CONFIG, GatewayConfig } from '../config/gateway-config';
import { ANONYMOUS_PRINCIPAL } from '../core/auth/access-token.service';
import { BearerAuthGuard } from '../core/auth/bearer-auth.guard';
import { GatewayError, GatewayErrorCode } from '../core/errors/gateway-error';
import { frameValidationPipe } from '../core/validation/frame-validation.pipe';
import { FrameEvent, MalformedFrame } from '../core/ws/frame-parser';
import { connectionOf } from '../core/ws/gateway-connection';
import { HeartbeatInterceptor, WsHeartbeat } from '../core/ws/heartbeat';
import { ProtocolGateway } from '../core/ws/protocol-gateway.decorator';
import { ClientToolsService } from './client-tools.service';
import { ConversationService } from './conversation.service';
import { ConfigureDto, RegisterToolsDto, StartSessionDto, TextInputDto, ToolResultDto } from './dto/client-messages.dto';
import { LlmConnection } from './llm-connection';
import { LlmConnectionLimitGuard } from './llm-connection-limit.guard';
import { LlmConnectionRegistry } from './llm-connection.registry';
import { errorFrame, LlmServerFrame, pongFrame, toolsRegisteredFrame } from './llm-gateway.frames';
import { LlmWsExceptionFilter } from './llm-ws-exception.filter';
import { SpeechCleaningInterceptor } from './speech-cleaning.interceptor';

/** Close code when a connection cannot get a session (the store is down): "internal error". */
const CLOSE_INTERNAL_ERROR = 1011;

/**
 * The voice assistant's WebSocket API (LLM gateway spec) at `/` and `/llm`. Auth and the
 * connection limit are checked at the upgrade; frames over `CLOUD_MAX_MESSAGE_SIZE` close the
 * socket with 1009; every other bad frame is answered with an `error` frame and the connection
 * stays open. Handlers validate and delegate: sessions and turns to {@link ConversationService},
 * device tools to {@link ClientToolsService}.
 */
@ProtocolGateway({
  path: '/',
  aliases: ['/llm'],
  upgradeGuards: [BearerAuthGuard, LlmConnectionLimitGuard],
  oversizedFrames: 'close',
})
@UseGuards(BearerAuthGuard)
@UseInterceptors(HeartbeatInterceptor, SpeechCleaningInterceptor)
@UseFilters(LlmWsExceptionFilter)
export class LlmGateway implements OnGatewayConnection, OnGatewayDisconnect {
  private readonly logger = new Logger('LlmGateway');

  constructor(
    private readonly conversation: ConversationService,
    private readonly clientTools: ClientToolsService,
    private readonly connections: LlmConnectionRegistry,
    private readonly heartbeat: WsHeartbeat,
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
  ) {}

  handleConnection(socket: WebSocket): void {
    const { id, principal } = connectionOf(socket);
    const connection = new LlmConnection(id, socket, principal ?? ANONYMOUS_PRINCIPAL);
    this.connections.add(connection);
    this.heartbeat.watch(socket, { intervalMs: this.config.server.pingIntervalMs, timeoutMs: this.config.server.pingTimeoutMs });
    connection.startWith(() =>
      this.conversation.open(connection).catch((error: unknown) => {
        this.logger.error(`Could not open a session: ${(error as Error).message}`);
        connection.send(errorFrame(GatewayErrorCode.SESSION_ERROR, 'Could not create a session'));
        socket.close(CLOSE_INTERNAL_ERROR, 'Session store unavailable');
      }),
    );
  }

  handleDisconnect(socket: WebSocket): void {
    const connection = this.connections.remove(socket);
    if (!connection) return;
    this.conversation.close(connection);
    this.clientTools.release(connection);
  }

  @SubscribeMessage('text_input')
  textInput(@ConnectedSocket() socket: WebSocket, @MessageBody(frameValidationPipe) input: TextInputDto): Observable<LlmServerFrame> {
    const connection = this.connectionOf(socket);
    return connection.serialize((emit, signal) => this.conversation.turn(connection, input, emit, signal));
  }

  @SubscribeMessage('configure')
  configure(@ConnectedSocket() socket: WebSocket, @MessageBody(frameValidationPipe) settings: ConfigureDto): Observable<LlmServerFrame> {
    const connection = this.connectionOf(socket);
    return connection.serialize(() => this.conversation.configure(connection, settings));
  }

  @SubscribeMessage('start_session')
  startSession(@ConnectedSocket() socket: WebSocket, @MessageBody(frameValidationPipe) request: StartSessionDto): Observable<LlmServerFrame> {
    const connection = this.connectionOf(socket);
    return connection.serialize((emit) => this.conversation.startSession(connection, request.session_id, emit));
  }

  @SubscribeMessage('end_session')
  endSession(@ConnectedSocket() socket: WebSocket): Observable<LlmServerFrame> {
    const connection = this.connectionOf(socket);
    return connection.serialize((emit) => this.conversation.endSession(connection, emit));
  }

  @SubscribeMessage('register_tools')
  registerTools(@ConnectedSocket() socket: WebSocket, @MessageBody(frameValidationPipe) request: RegisterToolsDto): LlmServerFrame {
    return toolsRegisteredFrame(this.clientTools.register(this.connectionOf(socket), request.tools));
  }

  @SubscribeMessage('tool_result')
  toolResult(@ConnectedSocket() socket: WebSocket, @MessageBody(frameValidationPipe) result: ToolResultDto): void {
    this.clientTools.settle(this.connectionOf(socket), result);
  }

  @SubscribeMessage('ping')
  ping(): LlmServerFrame {
    return pongFrame();
  }

  @SubscribeMessage(FrameEvent.UNKNOWN_TYPE)
  unknownType(@MessageBody() frame: { type: string }): never {
    throw new GatewayError(GatewayErrorCode.UNKNOWN_MESSAGE_TYPE, `Unknown message type ${JSON.stringify(frame.type)}`);
  }

  @SubscribeMessage(FrameEvent.UNTYPED)
  untyped(): never {
    throw new GatewayError(GatewayErrorCode.INVALID_MESSAGE, 'A message must be a JSON object with a string "type"');
  }

  @SubscribeMessage(FrameEvent.MALFORMED)
  malformed(@MessageBody() frame: MalformedFrame): never {
    throw new GatewayError(GatewayErrorCode.INVALID_MESSAGE, frame.reason);
  }

  private connectionOf(socket: WebSocket): LlmConnection {
    const connection = this.connections.of(socket);
    if (!connection) throw new GatewayError(GatewayErrorCode.INTERNAL_ERROR, 'Connection is closing');
    return connection;
  }
}
