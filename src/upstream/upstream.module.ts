import { Logger, Module, OnModuleInit } from '@nestjs/common';
import { GATEWAY_CONFIG, GatewayConfig } from '../config/gateway-config';
import { HealthModule } from '../health/health.module';
import { HealthChecks } from '../health/health-checks';
import { UPSTREAM_SERVERS } from './upstream.constants';
import { readMcpServersFile } from './upstream-servers.config';
import { UpstreamServersService } from './upstream-servers.service';
import { UpstreamHealthIndicator } from './upstream.health';

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
    UpstreamHealthIndicator,
  ],
  exports: [UpstreamServersService],
})
export class UpstreamModule implements OnModuleInit {
  constructor(
    private readonly checks: HealthChecks,
    private readonly upstreams: UpstreamServersService,
    private readonly health: UpstreamHealthIndicator,
  ) {}

  onModuleInit(): void {
    this.checks.add('mcp_upstreams', () => this.health.connected(), ['ready']);
    if (this.upstreams.size > 0) this.checks.add('mcp_upstreams', () => this.health.report());
  }
}
