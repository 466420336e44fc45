import { CanActivate, Inject, Injectable, NotFoundException } from '@nestjs/common';
import { GATEWAY_CONFIG, GatewayConfig } from '../config/gateway-config';

/** With `METRICS_PORT` set, `/metrics` lives on that listener only: on `CLOUD_PORT` it is a 404. */
@Injectable()
export class MetricsOnMainPortGuard implements CanActivate {
  private readonly elsewhere: boolean;

  constructor(@Inject(GATEWAY_CONFIG) config: GatewayConfig) {
    this.elsewhere = config.metrics.port !== 0;
  }

  canActivate(): boolean {
    if (this.elsewhere) throw new NotFoundException('Metrics are served on METRICS_PORT on this gateway');
    return true;
  }
}
