import { Injectable } from '@nestjs/common';
import type { HealthIndicatorFunction } from '@nestjs/terminus';

/**
 * - `health`: `GET /health`, what a load balancer asks: may new clients come here? A check that
 *   is down there makes it 503, so it belongs to what this instance cannot serve without (its
 *   session store); everything else it reports comes as `up` with details.
 * - `ready`: `GET /health/ready`, what an orchestrator asks: can this instance serve every turn
 *   and tool now? `READINESS_IGNORE` leaves checks out by key.
 */
export type HealthEndpoint = 'health' | 'ready';

/**
 * The checks the health endpoints run, each a terminus health indicator: a function answering
 * `{[key]: {status: 'up' | 'down', ...details}}`, made with terminus's `HealthIndicatorService`.
 * The gateway's modules add theirs when they are built, and so may an app's own:
 *
 * ```ts
 * @Module({ providers: [Db] })
 * export class DbModule {
 *   constructor(checks: HealthChecks, indicators: HealthIndicatorService, db: Db) {
 *     checks.add('db', async () => {
 *       const check = indicators.check('db');
 *       return (await db.ping()) ? check.up() : check.down({ message: 'The database does not answer' });
 *     }, ['health', 'ready']);
 *   }
 * }
 * ```
 */
@Injectable()
export class HealthChecks {
  private readonly checks: Record<HealthEndpoint, Map<string, HealthIndicatorFunction>> = { health: new Map(), ready: new Map() };

  /** Adds `check`, whose result is keyed `key`, to `endpoints` (`/health` unless told); a key added again replaces its check. */
  add(key: string, check: HealthIndicatorFunction, endpoints: readonly HealthEndpoint[] = ['health']): void {
    for (const endpoint of endpoints) this.checks[endpoint].set(key, check);
  }

  /** The checks `endpoint` runs, in the order they were added, without those keyed in `leftOut`. */
  of(endpoint: HealthEndpoint, leftOut: readonly string[] = []): HealthIndicatorFunction[] {
    return [...this.checks[endpoint]].filter(([key]) => !leftOut.includes(key)).map(([, check]) => check);
  }
}
