import type { INestApplicationContext, Type } from '@nestjs/common';

/**
 * The app's provider of `type` from any module, or `undefined` when none provides it: for what an
 * app may be built without (metrics, tokens, upstreams in an app without `GatewayModule`), or
 * what cannot be injected without a cycle.
 */
export function optionalProvider<T>(modules: Pick<INestApplicationContext, 'get'>, type: Type<T> | symbol): T | undefined {
  try {
    return modules.get<T>(type as Type<T>, { strict: false });
  } catch {
    return undefined;
  }
}
