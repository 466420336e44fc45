import { CanActivate, Inject, Injectable, NotFoundException } from '@nestjs/common';
import { GATEWAY_CONFIG, GatewayConfig } from '../config/gateway-config';

/** `CONSOLE_ENABLED=false` turns every console route into a 404. */
@Injectable()
export class ConsoleEnabledGuard implements CanActivate {
  private readonly enabled: boolean;

  constructor(@Inject(GATEWAY_CONFIG) config: GatewayConfig) {
    this.enabled = config.console.enabled;
  }

  canActivate(): boolean {
    if (!this.enabled) throw new NotFoundException('The web console is turned off on this gateway (CONSOLE_ENABLED=false)');
    return true;
  }
}
