import { CanActivate, Inject, Injectable, NotFoundException } from '@nestjs/common';
import { GATEWAY_CONFIG, GatewayConfig } from '../config/gateway-config';
import { UpgradeGuard, UpgradeRefusedException } from '../core/ws/upgrade-guard';

const TURNED_OFF = 'MCP is turned off on this gateway (MCP_ENABLED=false)';

/** `MCP_ENABLED=false` turns every MCP route into a 404, at the upgrade and on HTTP, before any auth. */
@Injectable()
export class McpEnabledGuard implements CanActivate, UpgradeGuard {
  private readonly enabled: boolean;

  constructor(@Inject(GATEWAY_CONFIG) config: GatewayConfig) {
    this.enabled = config.mcp.enabled;
  }

  canUpgrade(): void {
    if (!this.enabled) throw new UpgradeRefusedException(404, TURNED_OFF);
  }

  canActivate(): boolean {
    if (!this.enabled) throw new NotFoundException(TURNED_OFF);
    return true;
  }
}
