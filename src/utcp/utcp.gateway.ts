import { DeferrableBearerAuthGuard } from '../core/auth/deferrable-bearer-auth.guard';
import { thenMaybe, type MaybePromise } from '../core/maybe-promise';
import { ToolCallScope } from '../core/tools/tool-call-scope';
import type { GatewayConnection } from '../core/ws/connection';
import { OnFrame } from '../core/ws/on-frame.decorator';
import { ProtocolGateway, ProtocolGatewayHooks, WS_AUTH_DEADLINE } from '../core/ws/protocol-gateway.decorator';
import { callFrameSchema, discoverFrameSchema, UtcpAuthFrame, UtcpCallFrame, UtcpDiscoverFrame } from './dto/utcp.dto';
import { UtcpEndpointGuard } from './utcp-endpoint.guard';
import { answerUtcpFailure } from './utcp.errors';
import { authOkFrame, callAnswerFrame, discoveryResponseFrame, partialResultFrame, requestIdOf, UtcpManual, UtcpServerFrame } from './utcp.frames';
import { UtcpService } from './utcp.service';

/**
 * The UTCP WebSocket provider at `/utcp`: UTCP 0.1 `call` frames answered by `result` frames
 * with the call's id, several calls in flight at once and answered as each finishes; discovery
 * by `{"type":"utcp"}` (what 1.x clients send: the bare manual) or `{"type":"discover"}` (a
 * `discovery_response` carrying the manual). The token comes at the upgrade (header or
 * `?token=`) or in a first `{"type":"auth","token"}` frame, acknowledged by `auth_ok`; until
 * then only that frame is served. Failures are `error` frames; the connection stays open,
 * unless an auth frame failed.
 */
@ProtocolGateway({
  protocol: 'utcp',
  path: '/utcp',
  upgradeGuards: [DeferrableBearerAuthGuard, UtcpEndpointGuard],
  oversizedFrames: 'answer',
  authByMessage: WS_AUTH_DEADLINE,
})
export class UtcpGateway implements ProtocolGatewayHooks {
  constructor(
    private readonly utcp: UtcpService,
    private readonly auth: DeferrableBearerAuthGuard,
  ) {}

  /** Streamed pieces go out as they come; the answer is the call's last frame. */
  @OnFrame('call', { schema: callFrameSchema })
  call(frame: UtcpCallFrame, connection: GatewayConnection) {
    let streamed = false;
    const outcome = this.utcp.call(ToolCallScope.ofConnection(connection), frame.tool, frame.params, (value) => {
      streamed = true;
      connection.send(partialResultFrame(frame.id, value));
    });
    return thenMaybe(outcome, (settled) => callAnswerFrame(frame.id, settled, streamed));
  }

  @OnFrame('utcp')
  manual(_frame: unknown, connection: GatewayConnection): UtcpManual {
    return this.utcp.manual(connection.request, connection.principal);
  }

  @OnFrame('discover', { schema: discoverFrameSchema })
  discover(frame: UtcpDiscoverFrame, connection: GatewayConnection): UtcpServerFrame {
    return discoveryResponseFrame(frame.id, this.utcp.manual(connection.request, connection.principal));
  }

  @OnFrame('auth', { beforeAuth: true })
  authenticate(frame: UtcpAuthFrame, connection: GatewayConnection): MaybePromise<UtcpServerFrame> {
    return thenMaybe(this.auth.authenticate(connection, frame.token), () => authOkFrame(requestIdOf(frame)));
  }

  onFrameError(error: unknown, frame: unknown, connection: GatewayConnection): void {
    answerUtcpFailure(error, frame, connection);
  }
}
