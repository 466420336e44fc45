import { UseFilters, UseGuards } from '@nestjs/common';
import { ConnectedSocket, MessageBody, SubscribeMessage } from '@nestjs/websockets';
import type { Observable } from 'rxjs';
import type { WebSocket } from 'ws';
import { DeferrableBearerAuthGuard } from '../core/auth/deferrable-bearer-auth.guard';
import { GatewayError, GatewayErrorCode } from '../core/errors/gateway-error';
import { frameValidationPipe } from '../core/validation/frame-validation.pipe';
import { FrameEvent, MalformedFrame, OversizedFrame } from '../core/ws/frame-parser';
import { connectionOf } from '../core/ws/gateway-connection';
import { ProtocolGateway } from '../core/ws/protocol-gateway.decorator';
import { UtcpCallFrameDto, UtcpDiscoverFrameDto } from './dto/utcp-frame.dto';
import { UtcpEndpointGuard } from './utcp-endpoint.guard';
import { authOkFrame, callFrames, discoveryResponseFrame, requestIdOf } from './utcp-frames';
import { UtcpWsExceptionFilter } from './utcp-ws-exception.filter';
import type { UtcpManual, UtcpServerFrame } from './utcp.types';
import { UtcpService } from './utcp.service';

/**
 * The UTCP WebSocket provider at `/utcp`: UTCP 0.1 `call` frames answered by `result` frames
 * with the call's id, several calls in flight at once and answered as each finishes; discovery
 * by `{"type":"utcp"}` (what 1.x clients send: the bare manual) or `{"type":"discover"}` (a
 * `discovery_response` carrying the manual). The token comes at the upgrade (header or
 * `?token=`) or in a first `{"type":"auth","token"}` frame, acknowledged by `auth_ok`; until
 * then only that frame is served (`DeferrableBearerAuthGuard`). Failures are `error` frames
 * (see `UtcpWsExceptionFilter`); the socket stays open, unless an auth frame failed.
 */
@ProtocolGateway({
  path: '/utcp',
  upgradeGuards: [DeferrableBearerAuthGuard, UtcpEndpointGuard],
  oversizedFrames: 'answer',
})
@UseGuards(DeferrableBearerAuthGuard)
@UseFilters(UtcpWsExceptionFilter)
export class UtcpGateway {
  constructor(private readonly utcp: UtcpService) {}

  /** The guard checked the token before this runs; what is left is to say so. */
  @SubscribeMessage('auth')
  authenticated(@MessageBody() frame: unknown): UtcpServerFrame {
    return authOkFrame(requestIdOf(frame));
  }

  @SubscribeMessage('utcp')
  manual(@ConnectedSocket() socket: WebSocket): UtcpManual {
    return this.utcp.manual(connectionOf(socket).request);
  }

  @SubscribeMessage('discover')
  discover(
    @ConnectedSocket() socket: WebSocket,
    @MessageBody(frameValidationPipe) frame: UtcpDiscoverFrameDto,
  ): UtcpServerFrame {
    return discoveryResponseFrame(frame.id, this.utcp.manual(connectionOf(socket).request));
  }

  @SubscribeMessage('call')
  call(
    @ConnectedSocket() socket: WebSocket,
    @MessageBody(frameValidationPipe) frame: UtcpCallFrameDto,
  ): Observable<UtcpServerFrame> {
    return this.utcp.call(connectionOf(socket), frame.tool, frame.params).pipe(callFrames(frame.id));
  }

  @SubscribeMessage(FrameEvent.UNKNOWN_TYPE)
  unknownType(@MessageBody() frame: { type: string }): never {
    throw new GatewayError(
      GatewayErrorCode.UNKNOWN_MESSAGE_TYPE,
      `Unknown frame type ${JSON.stringify(frame.type)}: expected "call", "utcp", "discover" or "auth"`,
    );
  }

  @SubscribeMessage(FrameEvent.UNTYPED)
  untyped(): never {
    throw new GatewayError(GatewayErrorCode.INVALID_MESSAGE, 'A frame must be a JSON object with a string "type"');
  }

  @SubscribeMessage(FrameEvent.MALFORMED)
  malformed(@MessageBody() frame: MalformedFrame): never {
    throw new GatewayError(GatewayErrorCode.INVALID_MESSAGE, frame.reason);
  }

  @SubscribeMessage(FrameEvent.TOO_LARGE)
  tooLarge(@MessageBody() frame: OversizedFrame): never {
    throw new GatewayError(GatewayErrorCode.PAYLOAD_TOO_LARGE, `Frame of ${frame.bytes} bytes is over the ${frame.limit}-byte limit`);
  }
}
