import { Inject, Injectable } from '@nestjs/common';
import { GATEWAY_CONFIG, GatewayConfig } from '../config/gateway-config';
import { UpgradeContext, UpgradeGuard, UpgradeRefusedException } from '../core/ws/upgrade-guard';

/**
 * The spec's `maxConnections` (`MCP_WS_MAX_CONNECTIONS`, default 1): MCP WebSocket connections
 * at once, envelope and plain, on `/mcp` and the dedicated listener together; one more is
 * refused with 429 at the upgrade.
 */
@Injectable()
export class McpConnectionLimitGuard implements UpgradeGuard {
  private readonly limit: number;

  constructor(@Inject(GATEWAY_CONFIG) config: GatewayConfig) {
    this.limit = config.mcp.ws.maxConnections;
  }

  canUpgrade({ openConnections }: UpgradeContext): void {
    if (openConnections >= this.limit) {
      throw new UpgradeRefusedException(429, `Too many MCP connections: at most ${this.limit} at once (MCP_WS_MAX_CONNECTIONS)`);
    }
  }
}
