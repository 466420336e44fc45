import { DeferrableBearerAuthGuard } from '../core/auth/deferrable-bearer-auth.guard';
import { GatewayError, GatewayErrorCode } from '../core/errors/gateway-error';
import { MaybePromise, thenMaybe } from '../core/maybe-promise';
import { ToolCallScope } from '../core/tools/tool-call-scope';
import type { GatewayConnection } from '../core/ws/connection';
import { FrameEvent, MalformedFrame, OversizedFrame } from '../core/ws/frame-parser';
import { OnFrame } from '../core/ws/on-frame.decorator';
import { ProtocolGateway, ProtocolGatewayHooks, WS_AUTH_DEADLINE } from '../core/ws/protocol-gateway.decorator';
import type { UtcpAuthFrame } from './dto/utcp.dto';
import { streamParameter } from './request-endpoint';
import { UtcpEndpointGuard } from './utcp-endpoint.guard';
import { answerUtcpToolFailure } from './utcp.errors';
import { TOOL_AUTH_OK_FRAME, toolAnswerFrames, toolResponseFrame } from './utcp.frames';
import { UtcpService } from './utcp.service';

/** Frames a `/utcp/<tool>` connection may have waiting before the gateway stops reading it. */
export const MAX_WAITING_CALLS = 16;

/**
 * One tool per path, `/utcp/<tool>`, for UTCP 1.x clients: what the `utcp-websocket` plugin
 * sends for a call template without a `message` is the arguments object alone, so every frame
 * here is one call's arguments. It is answered with the result as JSON, or, on a URL with
 * `?stream=true`, with a `tool_response` frame per result and a `stream_end` (the frames the
 * plugin's `call_tool_streaming` reads); a failure is a `tool_error` frame.
 *
 * The frames carry no id, so a connection's frames are served one after another (`serial`), and
 * answered in the order they came; while more than {@link MAX_WAITING_CALLS} wait, the gateway
 * stops reading the connection until half of them are served: a client that sends calls faster
 * than they end is held back by TCP, not queued without bound, and no frame is refused (a
 * refusal out of turn would be read as the answer to an earlier call).
 *
 * A client without a token at the upgrade sends `{"type":"auth","token"}` first, answered by
 * `{"type":"auth_ok"}`; until then every frame is refused. A frame of type `auth` is always
 * authentication here, never a call's arguments.
 */
@ProtocolGateway({
  protocol: 'utcp',
  path: '/utcp/:tool',
  upgradeGuards: [DeferrableBearerAuthGuard, UtcpEndpointGuard],
  oversizedFrames: 'answer',
  authByMessage: WS_AUTH_DEADLINE,
  serial: { maxWaiting: MAX_WAITING_CALLS, whenFull: 'pause' },
})
export class UtcpToolGateway implements ProtocolGatewayHooks {
  constructor(
    private readonly utcp: UtcpService,
    private readonly auth: DeferrableBearerAuthGuard,
  ) {}

  /** The token is checked at once; saying so waits its turn. */
  @OnFrame('auth', { beforeAuth: true })
  authenticate(frame: UtcpAuthFrame, connection: GatewayConnection): MaybePromise<void> {
    return thenMaybe(this.auth.authenticate(connection, frame.token), () => void connection.queue().run(() => void connection.send(TOOL_AUTH_OK_FRAME)));
  }

  @OnFrame(FrameEvent.UNKNOWN_TYPE, { serial: true })
  typedArguments(args: object, connection: GatewayConnection): MaybePromise<void> {
    return this.call(connection, args);
  }

  @OnFrame(FrameEvent.UNTYPED, { serial: true })
  untypedArguments(args: unknown, connection: GatewayConnection): MaybePromise<void> {
    return this.call(connection, args);
  }

  @OnFrame(FrameEvent.MALFORMED, { serial: true })
  malformed(frame: MalformedFrame): void {
    throw new GatewayError(GatewayErrorCode.INVALID_MESSAGE, `${frame.reason}; send the arguments as a JSON object`);
  }

  @OnFrame(FrameEvent.TOO_LARGE, { serial: true })
  tooLarge(frame: OversizedFrame): void {
    throw new GatewayError(GatewayErrorCode.PAYLOAD_TOO_LARGE, `Frame of ${frame.bytes} bytes is over the ${frame.limit}-byte limit`);
  }

  onFrameError(error: unknown, frame: unknown, connection: GatewayConnection): void {
    answerUtcpToolFailure(error, frame, connection);
  }

  private call(connection: GatewayConnection, args: unknown): MaybePromise<void> {
    const streaming = streamParameter(connection.request.url) === true;
    const outcome = this.utcp.call(
      ToolCallScope.ofConnection(connection),
      connection.params.tool,
      args,
      streaming ? (value) => connection.send(toolResponseFrame(value)) : undefined,
    );
    return thenMaybe(outcome, (settled) => {
      for (const answer of toolAnswerFrames(settled, streaming)) connection.send(answer);
    });
  }
}
