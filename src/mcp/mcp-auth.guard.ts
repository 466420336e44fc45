import { Injectable } from '@nestjs/common';
import { BearerAuthGuard } from '../core/auth/bearer-auth.guard';
import type { MaybePromise } from '../core/maybe-promise';
import type { UpgradeContext } from '../core/ws/upgrade-guard';
import { MCP_REALM, PLAIN_MCP_SUBPROTOCOL } from './mcp.constants';

/** Whether the upgrade request offers the `mcp` subprotocol (plain MCP frames). */
export function offersPlainMcp(request: UpgradeContext['request']): boolean {
  const offered = request.headers['sec-websocket-protocol'];
  return typeof offered === 'string' && offered.split(',').some((protocol) => protocol.trim() === PLAIN_MCP_SUBPROTOCOL);
}

/**
 * The shared bearer guard on the MCP realm (`AUTH_TOKENS` and `MCP_WS_AUTH_TOKEN`, never open).
 * At the WebSocket upgrade only plain clients show a token; envelope clients authenticate with
 * their first message (the spec's rule), and their messages pass once it has succeeded.
 */
@Injectable()
export class McpAuthGuard extends BearerAuthGuard {
  protected override readonly realm = MCP_REALM;

  override canUpgrade(context: UpgradeContext): MaybePromise<void> {
    if (offersPlainMcp(context.request)) return super.canUpgrade(context);
  }
}
