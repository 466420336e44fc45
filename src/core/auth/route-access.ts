import { SetMetadata, Type } from '@nestjs/common';
import { GUARDS_METADATA } from '@nestjs/common/constants';
import { BearerAuthGuard } from './bearer-auth.guard';

const PUBLIC_KEY = 'vtg:public';

/**
 * Opens an HTTP controller or handler to callers with no token (health, the console's files,
 * OAuth metadata); `@ProtocolGateway({ public: true })` does the same for a WebSocket route.
 * Every other route needs a bearer token: the default is closed, so a route someone forgot to
 * protect is refused rather than served.
 */
export const Public = (): ClassDecorator & MethodDecorator => SetMetadata(PUBLIC_KEY, true);

/** Whether `target` (a controller class or a handler) was marked {@link Public}. */
export function isPublic(target: object): boolean {
  return Reflect.getMetadata(PUBLIC_KEY, target) === true;
}

/**
 * Whether `guards` authenticate by themselves: one is {@link BearerAuthGuard} or a guard built on
 * it (a realm of its own, such as MCP's), so the default check would only repeat it.
 */
export function authenticatesItself(guards: readonly unknown[]): boolean {
  return guards.some((guard) => typeof guard === 'function' && (guard === BearerAuthGuard || guard.prototype instanceof BearerAuthGuard));
}

/** The guards a controller class or handler lists with `@UseGuards`. */
export function guardsOf(target: object): unknown[] {
  return (Reflect.getMetadata(GUARDS_METADATA, target) as unknown[] | undefined) ?? [];
}

/** The guard classes a WebSocket route checks at its upgrade: its own, with the bearer check first unless one of them authenticates or the route is public. */
export function upgradeGuardsOf<T>(guards: Type<T>[] | undefined, open: boolean | undefined): Type<T>[] {
  const own = guards ?? [];
  return open || authenticatesItself(own) ? own : [BearerAuthGuard as unknown as Type<T>, ...own];
}
