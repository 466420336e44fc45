import { Inject, Injectable } from '@nestjs/common';
import { HealthIndicatorResult, HealthIndicatorService } from '@nestjs/terminus';
import { SESSION_STORE, SessionStore } from '../assistant/session/session-store';
import { DrainService } from '../core/lifecycle/drain.service';
import { ToolRegistryService } from '../core/tools/tool-registry.service';
import { ModelServerProbe } from './model-server.probe';

/**
 * The health module's own checks, as terminus indicators. Each is cheap (the model and Redis
 * probes are cached and shared), since balancers and orchestrators ask every few seconds.
 */
@Injectable()
export class GatewayHealthIndicators {
  constructor(
    private readonly indicators: HealthIndicatorService,
    private readonly modelServer: ModelServerProbe,
    private readonly drain: DrainService,
    private readonly registry: ToolRegistryService,
    @Inject(SESSION_STORE) private readonly store: SessionStore,
  ) {}

  /** Down once the drain has begun (upgrades are refused from then on), so balancers send new clients elsewhere. */
  accepting(): HealthIndicatorResult {
    const check = this.indicators.check('accepting');
    return this.drain.isDraining ? check.down({ message: 'Shutting down' }) : check.up();
  }

  process(): HealthIndicatorResult {
    return this.indicators.check('process').up({ uptime_s: Math.round(process.uptime()) });
  }

  tools(): HealthIndicatorResult {
    return this.indicators.check('tools').up({ count: this.registry.list().length });
  }

  /**
   * Down when the session store cannot be reached or did not answer its last probe: without it an
   * instance cannot serve a conversation. Probed first (bounded, cached), so the answer is current.
   */
  async sessions(): Promise<HealthIndicatorResult> {
    const check = this.indicators.check('sessions');
    const { problem } = await this.store.probe();
    const store = this.store.constructor.name;
    return this.store.ready ? check.up({ store }) : check.down({ store, message: problem ?? 'The session store is not connected' });
  }

  async model(): Promise<HealthIndicatorResult> {
    const check = this.indicators.check('model');
    const { up, status, problem, latencyMs } = await this.modelServer.check();
    const details = { url: this.modelServer.target, latency_ms: latencyMs, ...(status !== undefined && { http_status: status }) };
    return up ? check.up(details) : check.down({ ...details, message: problem });
  }

  /** A bounded round trip to Redis (cached briefly): an open connection to a frozen Redis is no sign of a working one. */
  async redis(): Promise<HealthIndicatorResult> {
    const check = this.indicators.check('redis');
    const { up, problem, latencyMs } = await this.store.probe();
    return up ? check.up({ latency_ms: latencyMs }) : check.down({ message: problem });
  }
}
