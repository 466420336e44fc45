import { Inject, Logger, UseInterceptors } from '@nestjs/common';
import { EMPTY, Observable } from 'rxjs';
import { GATEWAY_CONFIG, GatewayConfig } from '../config/gateway-config';
import { GatewayError, GatewayErrorCode } from '../core/errors/gateway-error';
import {
  CancelFrame,
  cancelSchema,
  ConfigureFrame,
  configureSchema,
  endSessionSchema,
  pingSchema,
  RegisterToolsFrame,
  registerToolsSchema,
  StartSessionFrame,
  startSessionSchema,
  LlmServerFrame,
  TextInputFrame,
  textInputSchema,
  ToolResultFrame,
  toolResultSchema,
} from './protocol';
import { OnFrame } from '../core/ws/on-frame.decorator';
import { ProtocolGateway, ProtocolGatewayHooks } from '../core/ws/protocol-gateway.decorator';
import { CLOSE_INTERNAL_ERROR } from '../core/ws/upgrade-router';
import { CLOSE_TRY_AGAIN_LATER } from '../core/ws/connection';
import { ClientToolsService } from './client-tools.service';
import { LlmConnection, LlmConnectionState, MAX_WAITING_REQUESTS } from './llm-connection';
import { llmErrorFrame } from './llm-gateway.errors';
import { errorFrame, pongFrame, statusFrame, toolsRegisteredFrame } from './llm-gateway.frames';
import { SessionBindingService } from './session-binding.service';
import { DeviceIdentityGuard } from '../fleet/device-identity.guard';
import { DeviceLinks } from './device-link';
import { TurnStarter } from './turn-starter';
import { LLM_PROTOCOL } from './llm-protocol-name';
import { SpeechCleaningInterceptor } from './speech-cleaning.interceptor';

export { LLM_PROTOCOL };

/**
 * The voice assistant's WebSocket API (LLM gateway spec) at `/` and `/llm`. Auth and the
 * connection limit are checked at the upgrade; frames over `CLOUD_MAX_MESSAGE_SIZE` close the
 * socket with 1009; every other bad frame is answered with an `error` frame and the connection
 * stays open. Handlers delegate: sessions to {@link SessionBindingService}, turns to
 * {@link TurnService}, device tools to {@link ClientToolsService}. Turns and session changes
 * run in the connection's serial queue, the session's creation first.
 */
@ProtocolGateway({
  protocol: LLM_PROTOCOL,
  path: '/',
  aliases: ['/llm'],
  upgradeGuards: [DeviceIdentityGuard],
  connectionCap: {
    setting: 'CLOUD_MAX_CONNECTIONS',
    limit: (config) => config.server.maxConnections,
    status: 503,
    closeCode: CLOSE_TRY_AGAIN_LATER,
    label: 'LLM-gateway',
  },
  serial: { maxWaiting: MAX_WAITING_REQUESTS, whenFull: 'refuse' },
  oversizedFrames: 'close',
})
export class LlmGateway implements ProtocolGatewayHooks<LlmConnectionState> {
  private readonly logger = new Logger('LlmGateway');

  constructor(
    private readonly binding: SessionBindingService,
    private readonly turns: TurnStarter,
    private readonly clientTools: ClientToolsService,
    private readonly devices: DeviceLinks,
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
  ) {}

  onOpen(connection: LlmConnection): void {
    connection.state = new LlmConnectionState(this.config.llm.streamByDefault);
    void connection.queue().run(() =>
      this.binding.open(connection).catch((error: unknown) => {
        this.logger.error(`Could not open a session: ${(error as Error).message}`);
        connection.send(errorFrame(GatewayErrorCode.SESSION_ERROR, 'Could not create a session'));
        connection.close(CLOSE_INTERNAL_ERROR, 'Session store unavailable');
      }),
    );
    this.devices.open(connection);
  }

  onClose(connection: LlmConnection): void {
    this.binding.release(connection);
    this.clientTools.release(connection);
    this.devices.close(connection);
  }

  /**
   * A turn, queued behind the connection's earlier requests; with barge-in on, the turns running
   * or waiting are cancelled first, so this one starts as soon as they have ended. Its frames are
   * the answer, cleaned for speech on their way out. While a turn waits for the answer to a
   * question it asked aloud, the next `text_input` is that answer instead.
   */
  @OnFrame('text_input', { schema: textInputSchema })
  @UseInterceptors(SpeechCleaningInterceptor)
  textInput(input: TextInputFrame, connection: LlmConnection): Observable<LlmServerFrame> {
    // The answer to a question a turn asked aloud: that turn goes on, and its frames say the rest.
    const { question } = connection.state;
    if (question) {
      question.answer(input.text);
      return EMPTY;
    }
    return this.turns.start(connection, input, { interrupt: connection.state.bargeIn }).frames;
  }

  /**
   * Stops the turns in flight, running or still waiting (a device may cancel the instant after
   * its `text_input`), or the one `turn_id` names; each answers `status: cancelled`, then `idle`.
   * With no turn in flight, the answer is `idle`. `spoken` belongs to the earliest turn, the one
   * the device was playing.
   */
  @OnFrame('cancel', { schema: cancelSchema })
  cancel(request: CancelFrame, connection: LlmConnection) {
    const { turns, sessionId } = connection.state;
    const named = request.turn_id === undefined ? undefined : turns.get(request.turn_id);
    if (request.turn_id !== undefined && !named) {
      throw new GatewayError(GatewayErrorCode.INVALID_MESSAGE, `No turn "${request.turn_id}" is running or waiting`);
    }
    const inFlight = (named ? [named] : [...turns.values()]).filter((turn) => !turn.answered);
    if (inFlight.length === 0) return statusFrame('idle', { session_id: sessionId });
    if (request.spoken !== undefined && request.spoken.length > inFlight[0].spokenLimit) {
      throw new GatewayError(GatewayErrorCode.INVALID_MESSAGE, 'spoken is longer than the answer so far');
    }
    inFlight.forEach((turn, index) => turn.cancel(index === 0 ? request.spoken : undefined));
    return undefined;
  }

  @OnFrame('configure', { schema: configureSchema, serial: true })
  configure(settings: ConfigureFrame, connection: LlmConnection): Promise<void> {
    return this.binding.configure(connection, settings);
  }

  @OnFrame('start_session', { schema: startSessionSchema, serial: true })
  startSession(request: StartSessionFrame, connection: LlmConnection): Promise<void> {
    return this.binding.startSession(connection, request.session_id);
  }

  @OnFrame('end_session', { schema: endSessionSchema, serial: true })
  endSession(_request: unknown, connection: LlmConnection): Promise<void> {
    return this.binding.endSession(connection);
  }

  @OnFrame('register_tools', { schema: registerToolsSchema })
  registerTools(request: RegisterToolsFrame, connection: LlmConnection) {
    const registered = toolsRegisteredFrame(this.clientTools.register(connection, request.tools));
    if (registered.count > 0) this.devices.toolsChanged(connection);
    return registered;
  }

  @OnFrame('tool_result', { schema: toolResultSchema })
  toolResult(result: ToolResultFrame, connection: LlmConnection): void {
    this.clientTools.settle(connection, result);
  }

  @OnFrame('ping', { schema: pingSchema })
  ping() {
    return pongFrame();
  }

  onFrameError(error: unknown) {
    return llmErrorFrame(error);
  }
}
