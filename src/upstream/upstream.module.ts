import { Inject, Logger, Module, OnModuleInit } from '@nestjs/common';
import { GATEWAY_CONFIG, GatewayConfig } from '../config/gateway-config';
import { HealthModule } from '../health/health.module';
import { HealthService } from '../health/health.service';
import { UPSTREAM_SERVERS } from './upstream.constants';
import { readMcpServersFile } from './upstream-servers.config';
import { UpstreamServersService } from './upstream-servers.service';

/**
 * Upstream MCP servers as a tool provider: the servers of `MCP_SERVERS_FILE` join the catalogue,
 * so every protocol serves their tools. The file is read and validated at boot (a bad entry
 * stops it); `MCP_ENABLED=false` turns MCP off as a whole, upstreams included.
 */
@Module({
  imports: [HealthModule],
  providers: [
    {
      provide: UPSTREAM_SERVERS,
      inject: [GATEWAY_CONFIG],
      useFactory: ({ mcp }: GatewayConfig) => {
        const { serversFile } = mcp.upstream;
        if (serversFile === undefined) return [];
        if (!mcp.enabled) {
          new Logger('McpUpstream').log(`MCP_ENABLED=false: the servers of ${serversFile} are not connected`);
          return [];
        }
        return readMcpServersFile(serversFile, mcp.upstream);
      },
    },
    UpstreamServersService,
  ],
  exports: [UpstreamServersService],
})
export class UpstreamModule implements OnModuleInit {
  constructor(
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
    private readonly health: HealthService,
    private readonly upstreams: UpstreamServersService,
  ) {}

  onModuleInit(): void {
    if (this.config.mcp.upstream.serversFile !== undefined && this.upstreams.size > 0) {
      this.health.register('mcp_upstreams', { critical: false, check: () => this.upstreams.report() });
    }
  }
}
