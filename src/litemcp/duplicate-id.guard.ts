import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { WebSocket } from 'ws';
import { frameId } from './litemcp-frame';
import { SeenIds } from './seen-ids';

/** A request whose id the connection has already used: answered with nothing at all. */
export class DuplicateRequestId extends Error {}

/**
 * The LiteMCP rule "a request whose id repeats one already seen is ignored": such a frame is
 * refused before validation and gets no answer (`LiteMcpWsExceptionFilter` drops
 * {@link DuplicateRequestId}). Ids are remembered per connection, boundedly (see {@link SeenIds}).
 * A guard, not an interceptor: on Node 20 each interceptor costs every frame two
 * `AsyncResource.bind` calls inside Nest, a tenth of a LiteMCP call's CPU (BENCHMARKS.md).
 */
@Injectable()
export class DuplicateIdGuard implements CanActivate {
  private readonly seen = new WeakMap<WebSocket, SeenIds>();

  canActivate(context: ExecutionContext): boolean {
    const ws = context.switchToWs();
    const id = frameId(ws.getData());
    if (id === null) return true;
    const socket = ws.getClient<WebSocket>();
    let seen = this.seen.get(socket);
    if (!seen) this.seen.set(socket, (seen = new SeenIds()));
    if (!seen.remember(id)) throw new DuplicateRequestId();
    return true;
  }
}
