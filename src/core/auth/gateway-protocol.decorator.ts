import { SetMetadata } from '@nestjs/common';

const PROTOCOL_KEY = 'vtg:protocol';

/**
 * Names the protocol an HTTP controller serves (`mcp`, `litemcp`, `utcp`), so the bearer guard
 * can refuse a token whose `protocols` (tokens file) leave it out, as it does at a WebSocket
 * upgrade. A controller without it (`/tools`) is open to every token.
 */
export const GatewayProtocol = (protocol: string): ClassDecorator => SetMetadata(PROTOCOL_KEY, protocol);

const FULL_ACCESS_KEY = 'vtg:full-access';

/**
 * Marks an HTTP controller that only a token with full access may read (`/metrics`: it names
 * every tool and the deployment's load): `AUTH_TOKENS`, or a named token whose entry restricts
 * neither tools, protocols nor turns. Others get 403.
 */
export const RequiresFullAccess = (): ClassDecorator => SetMetadata(FULL_ACCESS_KEY, true);

export function requiresFullAccess(controller: object): boolean {
  return Reflect.getMetadata(FULL_ACCESS_KEY, controller) === true;
}

/** The protocol `controller` was marked with, if any. */
export function gatewayProtocolOf(controller: object): string | undefined {
  return Reflect.getMetadata(PROTOCOL_KEY, controller) as string | undefined;
}
