import { Controller, Get, HttpStatus, Inject, Res, ServiceUnavailableException } from '@nestjs/common';
import { HealthCheckService, HealthIndicatorFunction } from '@nestjs/terminus';
import type { Response } from 'express';
import { Public } from '../core/auth/route-access';
import { GATEWAY_CONFIG, GatewayConfig } from '../config/gateway-config';
import { HealthChecks } from './health-checks';

/**
 * Health for load balancers and orchestrators, all open (no token), each terminus's report
 * (`{status, info, error, details}`): 200, or 503 with what is down under `error` (and `status`
 * `shutting_down` once shutdown has begun).
 * - `/health`: may new clients come here (not shutting down, the session store answers), with
 *   what this instance holds (tools, connections, sessions, upstreams) as details;
 * - `/health/live`: the process answers (a restart would not help otherwise); checks nothing;
 * - `/health/ready`: it can serve every turn and tool now (model server, Redis, upstream MCP
 *   servers, not shutting down).
 */
@Controller('health')
@Public()
export class HealthController {
  constructor(
    private readonly terminus: HealthCheckService,
    private readonly checks: HealthChecks,
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
  ) {}

  @Get()
  health(@Res() response: Response): Promise<void> {
    return this.answer(response, this.checks.of('health'));
  }

  @Get('live')
  live(@Res() response: Response): Promise<void> {
    return this.answer(response, []);
  }

  @Get('ready')
  ready(@Res() response: Response): Promise<void> {
    return this.answer(response, this.checks.of('ready', this.config.readiness.ignore));
  }

  /** terminus throws its report as a 503; it is answered as it is, not in a protocol's error format. */
  private async answer(response: Response, checks: HealthIndicatorFunction[]): Promise<void> {
    try {
      response.status(HttpStatus.OK).json(await this.terminus.check(checks));
    } catch (error) {
      if (!(error instanceof ServiceUnavailableException)) throw error;
      response.status(HttpStatus.SERVICE_UNAVAILABLE).json(error.getResponse());
    }
  }
}
