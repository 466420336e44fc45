import { Inject, Injectable } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { HealthIndicatorResult, HealthIndicatorService } from '@nestjs/terminus';
import { GATEWAY_CONFIG, GatewayConfig } from '../config/gateway-config';
import { optionalProvider } from '../core/optional-provider';
import { SESSION_STORE, SessionStore } from '../assistant/session/session-store';
import { UpstreamServersService } from '../upstream/upstream-servers.service';
import { HealthService } from './health.service';
import { ModelServerProbe } from './model-server.probe';

/**
 * What `/health/ready` checks, as terminus indicators: whether this instance can serve a turn
 * and every tool now. Each check is cheap (the model and Redis probes are cached), since
 * balancers and orchestrators ask every few seconds.
 */
@Injectable()
export class ReadinessIndicators {
  constructor(
    private readonly indicators: HealthIndicatorService,
    private readonly modelServer: ModelServerProbe,
    private readonly health: HealthService,
    private readonly modules: ModuleRef,
    @Inject(SESSION_STORE) private readonly sessions: SessionStore,
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
  ) {}

  /** Every check readiness runs: Redis only when sessions live there, none that `READINESS_IGNORE` names. */
  all(): (() => Promise<HealthIndicatorResult> | HealthIndicatorResult)[] {
    const { ignore } = this.config.readiness;
    const checks: [string, () => Promise<HealthIndicatorResult> | HealthIndicatorResult][] = [
      ['model', () => this.model()],
      ['mcp_upstreams', () => this.upstreams()],
    ];
    if (this.config.session.redisUrl) checks.push(['redis', () => this.redis()]);
    return [() => this.accepting(), ...checks.filter(([name]) => !ignore.includes(name)).map(([, check]) => check)];
  }

  /** Down once shutdown has begun, so balancers stop sending new clients while the rest drains. */
  accepting(): HealthIndicatorResult {
    const check = this.indicators.check('accepting');
    return this.health.isShuttingDown ? check.down({ message: 'Shutting down' }) : check.up();
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
    const { up, problem, latencyMs } = await this.sessions.probe();
    return up ? check.up({ latency_ms: latencyMs }) : check.down({ message: problem });
  }

  /** Down while an enabled upstream MCP server is not connected: its tools are missing from the catalogue. */
  upstreams(): HealthIndicatorResult {
    const check = this.indicators.check('mcp_upstreams');
    const service = this.upstreamService();
    const servers = Object.fromEntries(
      Object.entries((service?.report().servers ?? {}) as Record<string, { state: string }>).map(([name, status]) => [name, status.state]),
    );
    const missing = Object.entries(servers)
      .filter(([, state]) => state !== 'connected' && state !== 'disabled')
      .map(([name]) => name);
    return missing.length === 0 ? check.up({ servers }) : check.down({ servers, message: `Not connected: ${missing.join(', ')}` });
  }

  /** Looked up when asked: the upstream module reports to health, so it cannot be injected here. */
  private upstreamService(): UpstreamServersService | undefined {
    return optionalProvider(this.modules, UpstreamServersService);
  }
}
