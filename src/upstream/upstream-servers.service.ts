import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { GATEWAY_CONFIG, GatewayConfig } from '../config/gateway-config';
import { ContextCatalogueService } from '../core/context/context-catalogue.service';
import { ToolRegistryService } from '../core/tools/tool-registry.service';
import { GATEWAY_VERSION } from '../core/version';
import { UpstreamConnection, UpstreamStatus } from './upstream-connection';
import { UPSTREAM_SERVERS } from './upstream.constants';
import type { UpstreamServerConfig } from './upstream-servers.config';

/**
 * The upstream MCP servers of `MCP_SERVERS_FILE`, each kept connected by an
 * {@link UpstreamConnection}. They start connecting once the app has booted, all at once and
 * in the background, so that no upstream delays start-up or another; they are closed (stdio
 * children ended) once the app has shut down, after the drain, so calls in flight to them finish.
 */
@Injectable()
export class UpstreamServersService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly connections: UpstreamConnection[];

  constructor(
    @Inject(UPSTREAM_SERVERS) servers: UpstreamServerConfig[],
    @Inject(GATEWAY_CONFIG) config: GatewayConfig,
    registry: ToolRegistryService,
    contextCatalogue: ContextCatalogueService,
  ) {
    const { pingIntervalMs, retryMinMs, retryMaxMs, maxResultBytes } = config.mcp.upstream;
    const context = {
      registry,
      contextCatalogue,
      logger: new Logger('McpUpstream'),
      clientInfo: { name: config.mcp.serverName, version: GATEWAY_VERSION },
      pingIntervalMs,
      retryMinMs,
      retryMaxMs,
      maxResultBytes,
    };
    this.connections = servers.map((server, rank) => new UpstreamConnection(server, context, rank));
  }

  get size(): number {
    return this.connections.length;
  }

  onApplicationBootstrap(): void {
    this.connections.forEach((connection) => connection.start());
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.all(this.connections.map((connection) => connection.stop()));
  }

  /** Each upstream's status, by name (for `/health` and the metrics). */
  statuses(): Record<string, UpstreamStatus> {
    return Object.fromEntries(this.connections.map((connection) => [connection.server.name, connection.status()]));
  }
}
