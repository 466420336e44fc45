import { Controller, Get, HttpStatus, Inject, Res, ServiceUnavailableException } from '@nestjs/common';
import { HealthCheckService } from '@nestjs/terminus';
import type { Response } from 'express';
import { SESSION_STORE, SessionStore } from '../assistant/session/session-store';
import { HealthService } from './health.service';
import { ReadinessIndicators } from './readiness.indicators';

/**
 * Health for load balancers and orchestrators, all open (no token):
 * - `/health`: the gateway's own report (tools, sessions, connections, upstreams), 503 when not ready;
 *   the session store is probed first (a bounded round trip, cached), so its check is current;
 * - `/health/live`: the process answers (a restart would not help otherwise); never checks dependencies;
 * - `/health/ready`: it can serve now (model server, Redis, upstream MCP servers, not shutting
 *   down): 200, or 503 naming what failed, in terminus' format.
 */
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthService,
    private readonly checks: HealthCheckService,
    private readonly readiness: ReadinessIndicators,
    @Inject(SESSION_STORE) private readonly sessions: SessionStore,
  ) {}

  @Get()
  async check(@Res() response: Response): Promise<void> {
    await this.sessions.probe();
    const { ready, body } = this.health.report();
    response.status(ready ? HttpStatus.OK : HttpStatus.SERVICE_UNAVAILABLE).json(body);
  }

  @Get('live')
  live(): Promise<unknown> {
    return this.checks.check([]);
  }

  /** terminus throws its report as a 503; it is answered as it is, not in a protocol's error format. */
  @Get('ready')
  async ready(@Res() response: Response): Promise<void> {
    try {
      response.status(HttpStatus.OK).json(await this.checks.check(this.readiness.all()));
    } catch (error) {
      if (!(error instanceof ServiceUnavailableException)) throw error;
      response.status(HttpStatus.SERVICE_UNAVAILABLE).json(error.getResponse());
    }
  }
}
