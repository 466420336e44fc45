import { Inject, Injectable } from '@nestjs/common';
import { GATEWAY_CONFIG, GatewayConfig } from '../config/gateway-config';
import { ConnectionLimitGuard } from '../core/ws/connection-limit.guard';
import { UpgradeRefusedException } from '../core/ws/upgrade-guard';

/**
 * The spec's `maxConnections` (`MCP_WS_MAX_CONNECTIONS`, default 1): MCP WebSocket connections
 * at once, envelope and plain, on `/mcp` and the dedicated listener together; one more is
 * refused with 429 at the upgrade.
 */
@Injectable()
export class McpConnectionLimitGuard extends ConnectionLimitGuard {
  protected readonly limit: number;

  constructor(@Inject(GATEWAY_CONFIG) config: GatewayConfig) {
    super();
    this.limit = config.mcp.ws.maxConnections;
  }

  protected refusal(limit: number): UpgradeRefusedException {
    return new UpgradeRefusedException(429, `Too many MCP connections: at most ${limit} at once (MCP_WS_MAX_CONNECTIONS)`);
  }
}
