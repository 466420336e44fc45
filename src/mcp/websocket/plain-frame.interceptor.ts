import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import { EMPTY, Observable } from 'rxjs';
import type { WebSocket } from 'ws';
import { McpSocketSessions } from './mcp-socket-sessions.service';

/**
 * On a plain MCP connection every frame is a JSON-RPC message, not an envelope: whichever
 * handler the adapter routed it to by its `type`, it goes to the connection's transport, and
 * the envelope handlers never run (interceptors run before pipes and handlers).
 */
@Injectable()
export class PlainFrameInterceptor implements NestInterceptor {
  constructor(private readonly sessions: McpSocketSessions) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const ws = context.switchToWs();
    const plain = this.sessions.plain(ws.getClient<WebSocket>());
    if (!plain) return next.handle();
    plain.receive(ws.getPattern(), ws.getData());
    return EMPTY;
  }
}
