import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import { EMPTY, Observable } from 'rxjs';
import type { WebSocket } from 'ws';
import { frameId } from './litemcp-frame';
import { SeenIds } from './seen-ids';

/**
 * The LiteMCP rule "a request whose id repeats one already seen is ignored": such a frame gets
 * no answer at all. Ids are remembered per connection, boundedly (see {@link SeenIds}).
 */
@Injectable()
export class DuplicateIdInterceptor implements NestInterceptor {
  private readonly seen = new WeakMap<WebSocket, SeenIds>();

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const ws = context.switchToWs();
    const id = frameId(ws.getData());
    if (id === null) return next.handle();
    const socket = ws.getClient<WebSocket>();
    let seen = this.seen.get(socket);
    if (!seen) this.seen.set(socket, (seen = new SeenIds()));
    return seen.remember(id) ? next.handle() : EMPTY;
  }
}
