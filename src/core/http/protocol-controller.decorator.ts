import { applyDecorators, CanActivate, Controller, createParamDecorator, ExecutionContext, Type, UseGuards } from '@nestjs/common';
import type { ServerResponse } from 'http';
import { AuthenticatedRequest, BearerAuthGuard } from '../auth/bearer-auth.guard';
import { GatewayProtocol, gatewayProtocolOf } from '../auth/gateway-protocol.decorator';
import { ToolCallScope } from '../tools/tool-call-scope';

export interface ProtocolControllerOptions {
  /** The protocol's name (`mcp`, `litemcp`, `utcp`): a token's `protocols` must include it. */
  protocol: string;
  /** The controller's path, as `@Controller` takes it. */
  path: string;
  /** Guards checked before authentication (is the protocol on, is the route served here). */
  before?: Type<CanActivate>[];
  /** The guard that authenticates, when the protocol has a realm of its own; the shared bearer check otherwise. */
  auth?: Type<CanActivate>;
}

/**
 * An HTTP controller of a protocol, declared once: its path, its protocol (so a token limited to
 * other protocols is refused, as at a WebSocket upgrade) and how it authenticates (the shared
 * bearer check unless `auth` names another; `DefaultAuthGuard` applies it when no guard is
 * listed). Its handlers take their call scope with {@link CallScope}.
 */
export function ProtocolController({ protocol, path, before = [], auth }: ProtocolControllerOptions): ClassDecorator {
  const guards: Type<CanActivate>[] = auth || before.length > 0 ? [...before, auth ?? BearerAuthGuard] : [];
  return applyDecorators(Controller(path), GatewayProtocol(protocol), ...(guards.length > 0 ? [UseGuards(...guards)] : []));
}

/**
 * The scope a handler's tool calls run in: its caller's principal, the controller's protocol
 * (`http` for a controller of none), and a signal that aborts when the client goes away before
 * the answer is written.
 */
export const CallScope = createParamDecorator((_data: unknown, context: ExecutionContext): ToolCallScope => {
  const http = context.switchToHttp();
  return ToolCallScope.ofRequest(gatewayProtocolOf(context.getClass()) ?? 'http', http.getRequest<AuthenticatedRequest>(), http.getResponse<ServerResponse>());
});
