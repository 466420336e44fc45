import { BeforeApplicationShutdown, Injectable } from '@nestjs/common';

export type HealthState = 'up' | 'down' | 'degraded';

export interface HealthReport {
  state: HealthState;
  [detail: string]: unknown;
}

export interface HealthIndicator {
  /** A `down` critical indicator makes `/health` answer 503 (not ready). */
  critical: boolean;
  check(): HealthReport;
}

/**
 * What `GET /health` reports. Parts of the gateway with a state worth watching (upstream MCP
 * servers, the session store, the connection pool) add an indicator here.
 */
@Injectable()
export class HealthService implements BeforeApplicationShutdown {
  private readonly indicators = new Map<string, HealthIndicator>();
  private readonly startedAt = Date.now();
  private shuttingDown = false;

  register(name: string, indicator: HealthIndicator): void {
    this.indicators.set(name, indicator);
  }

  /** Whether shutdown has begun. */
  get isShuttingDown(): boolean {
    return this.shuttingDown;
  }

  /** From here on `/health` answers 503, so load balancers stop sending new clients. */
  beforeApplicationShutdown(): void {
    this.shuttingDown = true;
  }

  report(): { ready: boolean; body: Record<string, unknown> } {
    const checks: Record<string, HealthReport> = {};
    let ready = !this.shuttingDown;
    let degraded = false;
    for (const [name, indicator] of this.indicators) {
      const report = indicator.check();
      checks[name] = report;
      if (report.state !== 'up') degraded = true;
      if (report.state === 'down' && indicator.critical) ready = false;
    }
    const status = this.shuttingDown ? 'shutting_down' : !ready ? 'down' : degraded ? 'degraded' : 'ok';
    return {
      ready,
      body: { status, uptime_s: Math.round((Date.now() - this.startedAt) / 1000), checks },
    };
  }
}
