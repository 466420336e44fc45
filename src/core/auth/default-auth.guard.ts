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
  constructor(private readonly bearer: BearerAuthGuard) {}

  canActivate(context: ExecutionContext): MaybePromise<boolean> {
    if (context.getType() !== 'http') return true;
    const targets = [context.getHandler(), context.getClass()];
    if (targets.some(isPublic) || targets.some((target) => authenticatesItself(guardsOf(target)))) return true;
    return this.bearer.canActivate(context);
  }
}
