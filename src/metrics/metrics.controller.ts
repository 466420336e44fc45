import { Controller, Get, Res, UseGuards } from '@nestjs/common';
import type { Response } from 'express';
import { BearerAuthGuard } from '../core/auth/bearer-auth.guard';
import { RequiresFullAccess } from '../core/auth/gateway-protocol.decorator';
import { MetricsOnMainPortGuard } from './metrics-on-main-port.guard';
import { MetricsService } from './metrics.service';

/**
 * `GET /metrics` on `CLOUD_PORT`, in Prometheus' text format. Behind the shared bearer check:
 * the figures name the tools, upstreams and load of the deployment, so with `AUTH_TOKENS` set
 * Prometheus sends a token (`authorization` in its scrape config).
 */
@Controller('metrics')
@RequiresFullAccess()
@UseGuards(MetricsOnMainPortGuard, BearerAuthGuard)
export class MetricsController {
  constructor(private readonly metrics: MetricsService) {}

  @Get()
  async scrape(@Res() response: Response): Promise<void> {
    const { contentType, body } = await this.metrics.scrape();
    // Written as it is: Express' send() would add a charset to Prometheus' own content type.
    response.status(200).setHeader('Content-Type', contentType);
    response.end(body);
  }
}
