import { thenMaybe } from '../core/maybe-promise';
import { ToolCallScope } from '../core/tools/tool-call-scope';
import type { FrameConnection } from '../core/ws/connection';
import { OnFrame } from '../core/ws/on-frame.decorator';
import { ProtocolGateway, ProtocolGatewayHooks } from '../core/ws/protocol-gateway.decorator';
import { callFrameSchema, getFrameSchema, LiteMcpCallFrame, LiteMcpGetFrame } from './dto/litemcp.dto';
import { liteMcpFailure } from './litemcp.errors';
import { infoFrame, LiteMcpServerFrame, resultFrame } from './litemcp.frames';
import { LiteMcpService } from './litemcp.service';
import { LiteMcpToolPathGuard } from './litemcp-tool-path.guard';
import { SeenIds } from './seen-ids';

/** A LiteMCP connection's own state: the request ids it has used. */
export interface LiteMcpConnectionState {
  seen: SeenIds;
}

type LiteMcpConnection = FrameConnection<LiteMcpConnectionState>;

/**
 * LiteMCP over WebSocket: one tool per path, `/litemcp/<tool>`. Bearer auth and the tool's
 * existence are checked at the upgrade; each request is answered by id, a request whose id
 * repeats one already seen is ignored (the spec's rule), and a failure of any kind is answered
 * in LiteMCP (`liteMcpFailure`) with the connection kept open. The same handlers serve LiteMCP
 * over stdio (`stdio/`).
 */
@ProtocolGateway({
  protocol: 'litemcp',
  path: '/litemcp/:tool',
  upgradeGuards: [LiteMcpToolPathGuard],
  oversizedFrames: 'answer',
})
export class LiteMcpGateway implements ProtocolGatewayHooks<LiteMcpConnectionState> {
  constructor(private readonly liteMcp: LiteMcpService) {}

  onOpen(connection: LiteMcpConnection): void {
    connection.state = { seen: new SeenIds() };
  }

  @OnFrame('get', { schema: getFrameSchema })
  describe(frame: LiteMcpGetFrame, connection: LiteMcpConnection): LiteMcpServerFrame | undefined {
    if (!connection.state.seen.remember(frame.id)) return undefined;
    return infoFrame(frame.id, this.liteMcp.describe(connection.params.tool, frame.version, connection.principal));
  }

  @OnFrame('call', { schema: callFrameSchema })
  call(frame: LiteMcpCallFrame, connection: LiteMcpConnection) {
    if (!connection.state.seen.remember(frame.id)) return undefined;
    const outcome = this.liteMcp.call(ToolCallScope.ofConnection(connection), connection.params.tool, frame.data);
    return thenMaybe(outcome, ({ result }) => resultFrame(frame.id, result));
  }

  onFrameError(error: unknown, frame: unknown): LiteMcpServerFrame {
    return liteMcpFailure(error, frame);
  }
}
