import { UseFilters, UseGuards } from '@nestjs/common';
import { SubscribeMessage } from '@nestjs/websockets';
import { EMPTY, Observable, of } from 'rxjs';
import { WebSocket } from 'ws';
import { DeferrableBearerAuthGuard } from '../core/auth/deferrable-bearer-auth.guard';
import { GatewayError, GatewayErrorCode } from '../core/errors/gateway-error';
import { FrameEvent, MalformedFrame, OversizedFrame } from '../core/ws/frame-parser';
import { connectionOf } from '../core/ws/gateway-connection';
import { ProtocolGateway } from '../core/ws/protocol-gateway.decorator';
import { InOrderQueue } from './in-order-queue';
import { streamParameter } from './request-endpoint';
import { UtcpEndpointGuard } from './utcp-endpoint.guard';
import { plainToolFrames, streamingToolFrames, TOOL_AUTH_OK_FRAME } from './utcp-frames';
import { UtcpWsExceptionFilter } from './utcp-ws-exception.filter';
import { UtcpService } from './utcp.service';

/**
 * One tool per path, `/utcp/<tool>`, for UTCP 1.x clients: what the `utcp-websocket` plugin
 * sends for a call template without a `message` is the arguments object alone, so every frame
 * here is one call's arguments. It is answered with the result as JSON, or, on a URL with
 * `?stream=true`, with a `tool_response` frame per result and a `stream_end` (the frames the
 * plugin's `call_tool_streaming` reads); a failure is a `tool_error` frame.
 *
 * The frames carry no id, so a connection's calls run one after another and are answered in
 * the order they came. Every handler here takes the same steps through Nest (the same guard, no
 * pipe or interceptor sets one apart), so Nest reaches them in arrival order, and each puts its
 * work in the connection's queue at once.
 *
 * A client without a token at the upgrade sends `{"type":"auth","token"}` first, answered by
 * `{"type":"auth_ok"}`; until then every frame is refused (`DeferrableBearerAuthGuard`). A frame
 * of type `auth` is always authentication here, never a call's arguments.
 */
@ProtocolGateway({
  path: '/utcp/:tool',
  upgradeGuards: [DeferrableBearerAuthGuard, UtcpEndpointGuard],
  oversizedFrames: 'answer',
})
@UseGuards(DeferrableBearerAuthGuard)
@UseFilters(UtcpWsExceptionFilter)
export class UtcpToolGateway {
  private readonly queues = new WeakMap<WebSocket, InOrderQueue>();

  constructor(private readonly utcp: UtcpService) {}

  /** The guard checked the token before this runs; what is left is to say so, in turn. */
  @SubscribeMessage('auth')
  authenticated(socket: WebSocket): Observable<string> {
    return this.inOrder(socket, () => of(TOOL_AUTH_OK_FRAME));
  }

  @SubscribeMessage(FrameEvent.UNKNOWN_TYPE)
  typedArguments(socket: WebSocket, args: object): Observable<string> {
    return this.inOrder(socket, () => this.call(socket, args));
  }

  @SubscribeMessage(FrameEvent.UNTYPED)
  untypedArguments(socket: WebSocket, args: unknown): Observable<string> {
    return this.inOrder(socket, () => this.call(socket, args));
  }

  @SubscribeMessage(FrameEvent.MALFORMED)
  malformed(socket: WebSocket, frame: MalformedFrame): Observable<string> {
    return this.inOrder(socket, () => {
      throw new GatewayError(GatewayErrorCode.INVALID_MESSAGE, `${frame.reason}; send the arguments as a JSON object`);
    });
  }

  @SubscribeMessage(FrameEvent.TOO_LARGE)
  tooLarge(socket: WebSocket, frame: OversizedFrame): Observable<string> {
    return this.inOrder(socket, () => {
      throw new GatewayError(GatewayErrorCode.PAYLOAD_TOO_LARGE, `Frame of ${frame.bytes} bytes is over the ${frame.limit}-byte limit`);
    });
  }

  private call(socket: WebSocket, args: unknown): Observable<string> {
    const connection = connectionOf(socket);
    const frames = streamParameter(connection.request.url) ? streamingToolFrames() : plainToolFrames();
    return this.utcp.call(connection, connection.params.tool, args).pipe(frames);
  }

  /** Queues `work` behind the connection's earlier frames; a socket closed meanwhile gets nothing. */
  private inOrder(socket: WebSocket, work: () => Observable<string>): Observable<string> {
    let queue = this.queues.get(socket);
    if (!queue) this.queues.set(socket, (queue = new InOrderQueue()));
    return queue.enqueue(() => (socket.readyState === WebSocket.OPEN ? work() : EMPTY));
  }
}
