import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { MaybePromise } from '../maybe-promise';
import { BearerAuthGuard } from './bearer-auth.guard';
import { authenticatesItself, guardsOf, isPublic } from './route-access';

/**
 * The application-wide guard that makes every HTTP route need a bearer token unless it says
 * otherwise: routes marked {@link Public} pass, routes whose own guards authenticate (a
 * {@link BearerAuthGuard}, or one built on it, in `@UseGuards`) are left to them, and every other
 * route, one a module added and forgot to protect included, gets the shared bearer check.
 */
@Injectable()
export class DefaultAuthGuard implements CanActivate {
  /**
   * Whether a route (controller, then handler: a handler may be inherited by controllers marked
   * apart) is left to itself, public or authenticated by its own guards: its decorators do not
   * change, so they are read once, not on every request.
   */
  private readonly exempt = new WeakMap<object, WeakMap<object, boolean>>();

  constructor(private readonly bearer: BearerAuthGuard) {}

  canActivate(context: ExecutionContext): MaybePromise<boolean> {
    if (context.getType() !== 'http') return true;
    return this.isExempt(context.getHandler(), context.getClass()) || this.bearer.canActivate(context);
  }

  private isExempt(handler: object, controller: object): boolean {
    let handlers = this.exempt.get(controller);
    if (!handlers) this.exempt.set(controller, (handlers = new WeakMap()));
    let exempt = handlers.get(handler);
    if (exempt === undefined) {
      const targets = [handler, controller];
      exempt = targets.some(isPublic) || targets.some((target) => authenticatesItself(guardsOf(target)));
      handlers.set(handler, exempt);
    }
    return exempt;
  }
}
