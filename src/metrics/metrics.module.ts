import { Global, Module, OnApplicationBootstrap } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { ASSISTANT_OBSERVER } from '../assistant/assistant-observer';
import { CORE_OBSERVER } from '../core/observability/core-observer';
import { BUDGET_OBSERVER } from '../core/budgets/budget-observer';
import { optionalProvider } from '../core/optional-provider';
import { ToolRegistryService } from '../core/tools/tool-registry.service';
import { ContextCatalogueService } from '../core/context/context-catalogue.service';
import { SessionService } from '../assistant/session/session.service';
import { ConnectionRegistry } from '../core/ws/connection-registry';
import { ProtocolRegistry } from '../core/protocols/protocol-registry';
import { UpstreamServersService } from '../upstream/upstream-servers.service';
import { MetricsListener } from './metrics-listener';
import { MetricsOnMainPortGuard } from './metrics-on-main-port.guard';
import { MetricsController } from './metrics.controller';
import { MetricsService } from './metrics.service';
import { registerScrapeTimeMetrics, ScrapeSources } from './scrape-time-metrics';
import { FLEET_STORES, FleetStores } from '../fleet/fleet-stores';
import { LocalDevices } from '../fleet/local-devices';
import { Sdk2Binder } from '../mcp/revisions/2026/sdk2-binder';
import { REDIS_PERSISTENCE, type RedisPersistenceWatch } from '../core/redis/redis-persistence-watch';

/**
 * Prometheus metrics: `MetricsService` (global; the shared core reports to it as its `CoreObserver`), `/metrics`
 * on `CLOUD_PORT` or on `METRICS_PORT`, and the figures read at scrape time.
 */
@Global()
@Module({
  controllers: [MetricsController],
  providers: [
    MetricsService,
    MetricsListener,
    MetricsOnMainPortGuard,
    { provide: CORE_OBSERVER, useExisting: MetricsService },
    { provide: ASSISTANT_OBSERVER, useExisting: MetricsService },
    { provide: BUDGET_OBSERVER, useExisting: MetricsService },
  ],
  exports: [MetricsService, CORE_OBSERVER, ASSISTANT_OBSERVER, BUDGET_OBSERVER],
})
export class MetricsModule implements OnApplicationBootstrap {
  constructor(
    private readonly metrics: MetricsService,
    private readonly modules: ModuleRef,
  ) {}

  /**
   * Looked up once every module exists: the upstream service itself reports tool calls here, so
   * injecting it into the metrics would make a cycle.
   */
  /** The fleet's device counts, when the app has the fleet. */
  private fleetCounts(): ScrapeSources['fleet'] {
    const stores = optionalProvider<FleetStores>(this.modules, FLEET_STORES);
    const local = optionalProvider(this.modules, LocalDevices);
    return stores && local ? { online: () => stores.directory.size, local: () => local.count } : undefined;
  }

  onApplicationBootstrap(): void {
    this.modules.get(ContextCatalogueService, { strict: false }).watch(this.metrics);
    registerScrapeTimeMetrics(this.metrics.registry, {
      connections: this.modules.get(ConnectionRegistry, { strict: false }),
      protocols: this.modules.get(ProtocolRegistry, { strict: false }),
      sessions: this.modules.get(SessionService, { strict: false }),
      tools: this.modules.get(ToolRegistryService, { strict: false }),
      upstreams: optionalProvider(this.modules, UpstreamServersService),
      fleet: this.fleetCounts(),
      modernMcp: optionalProvider(this.modules, Sdk2Binder),
      redisPersistence: optionalProvider<RedisPersistenceWatch>(this.modules, REDIS_PERSISTENCE),
    });
  }
}
