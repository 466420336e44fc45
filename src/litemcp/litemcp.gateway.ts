import { UseFilters, UseGuards } from '@nestjs/common';
import { ConnectedSocket, MessageBody, SubscribeMessage } from '@nestjs/websockets';
import type { WebSocket } from 'ws';
import { BearerAuthGuard } from '../core/auth/bearer-auth.guard';
import { GatewayError, GatewayErrorCode } from '../core/errors/gateway-error';
import { FrameEvent, MalformedFrame, OversizedFrame } from '../core/ws/frame-parser';
import { connectionOf } from '../core/ws/gateway-connection';
import { ProtocolGateway } from '../core/ws/protocol-gateway.decorator';
import { frameValidationPipe } from '../core/validation/frame-validation.pipe';
import { DuplicateIdGuard } from './duplicate-id.guard';
import { LiteMcpCallFrameDto, LiteMcpGetFrameDto } from './dto/litemcp-frame.dto';
import { LiteMcpWsExceptionFilter } from './litemcp-ws-exception.filter';
import { infoFrame, resultFrame } from './litemcp-frame';
import { LiteMcpToolPathGuard } from './litemcp-tool-path.guard';
import type { LiteMcpServerFrame } from './litemcp.types';
import { LiteMcpService } from './litemcp.service';

/**
 * LiteMCP over WebSocket: one tool per path, `/litemcp/<tool>`. Bearer auth and the tool's
 * existence are checked at the upgrade; each frame is validated, answered by id, and a failure
 * of any kind is answered in LiteMCP (see `LiteMcpWsExceptionFilter`) with the socket kept open.
 */
@ProtocolGateway({
  path: '/litemcp/:tool',
  upgradeGuards: [BearerAuthGuard, LiteMcpToolPathGuard],
  oversizedFrames: 'answer',
})
@UseGuards(BearerAuthGuard, DuplicateIdGuard)
@UseFilters(LiteMcpWsExceptionFilter)
export class LiteMcpGateway {
  constructor(private readonly liteMcp: LiteMcpService) {}

  @SubscribeMessage('get')
  describe(
    @ConnectedSocket() socket: WebSocket,
    @MessageBody(frameValidationPipe) frame: LiteMcpGetFrameDto,
  ): LiteMcpServerFrame {
    return infoFrame(frame.id, this.liteMcp.describe(connectionOf(socket).params.tool, frame.version));
  }

  @SubscribeMessage('call')
  async call(
    @ConnectedSocket() socket: WebSocket,
    @MessageBody(frameValidationPipe) frame: LiteMcpCallFrameDto,
  ): Promise<LiteMcpServerFrame> {
    const connection = connectionOf(socket);
    const { result } = await this.liteMcp.call(connection.params.tool, frame.data, {
      principal: connection.principal,
      connectionId: connection.id,
    });
    return resultFrame(frame.id, result);
  }

  @SubscribeMessage(FrameEvent.UNKNOWN_TYPE)
  unknownType(@MessageBody() frame: { type: string }): never {
    throw new GatewayError(
      GatewayErrorCode.UNKNOWN_MESSAGE_TYPE,
      `Unknown request type ${JSON.stringify(frame.type)}: expected "get" or "call"`,
    );
  }

  @SubscribeMessage(FrameEvent.UNTYPED)
  untyped(): never {
    throw new GatewayError(GatewayErrorCode.INVALID_MESSAGE, 'A request must be a JSON object with a string "type"');
  }

  @SubscribeMessage(FrameEvent.MALFORMED)
  malformed(@MessageBody() frame: MalformedFrame): never {
    throw new GatewayError(GatewayErrorCode.INVALID_MESSAGE, frame.reason);
  }

  @SubscribeMessage(FrameEvent.TOO_LARGE)
  tooLarge(@MessageBody() frame: OversizedFrame): never {
    throw new GatewayError(
      GatewayErrorCode.PAYLOAD_TOO_LARGE,
      `Request of ${frame.bytes} bytes is over the ${frame.limit}-byte limit`,
    );
  }
}
