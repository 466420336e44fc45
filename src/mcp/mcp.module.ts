import { Inject, Logger, Module, OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { HealthIndicatorService } from '@nestjs/terminus';
import { GATEWAY_CONFIG, GatewayConfig } from '../config/gateway-config';
import { AccessTokenService } from '../core/auth/access-token.service';
import { HttpErrorFormats } from '../core/http/http-error-formats';
import { ProtocolRegistry } from '../core/protocols/protocol-registry';
import { HealthModule } from '../health/health.module';
import { HealthChecks } from '../health/health-checks';
import { LocalMcpHttpSessionStore, MCP_HTTP_SESSION_STORE, McpHttpSessionStore } from './transports/http/mcp-http-session-store';
import { McpHttpSessions } from './transports/http/mcp-http-sessions.service';
import { ModernHttpRequests } from './transports/http/modern-http-requests';
import { RedisMcpHttpSessionStore } from './transports/http/redis-mcp-http-session-store';
import { McpMethods } from './methods/mcp-methods';
import { McpTasks } from './methods/tasks/mcp-tasks.service';
import { Sdk1Binder } from './revisions/2025/sdk1-binder';
import { Sdk2Binder } from './revisions/2026/sdk2-binder';
import { McpAuthGuard } from './mcp-auth.guard';
import { McpEnabledGuard } from './mcp-enabled.guard';
import { mcpRealmTokens } from './mcp-realm';
import { MCP_PATH, MCP_PROTOCOL, MCP_REALM } from './mcp.constants';
import { mcpHttpErrorBody } from './mcp.errors';
import { MCP_DECLARATION } from './mcp.protocol';
import { McpController } from './mcp.controller';
import { DeviceMcpController } from './transports/http/device-mcp.controller';
import { FleetModule } from '../fleet/fleet.module';
import { McpGateway } from './mcp.gateway';
import { McpHeartbeatInterceptor } from './transports/websocket/mcp-heartbeat.interceptor';
import { McpDedicatedListener } from './transports/websocket/mcp-dedicated-listener';
import { ConnectionRegistry } from '../core/ws/connection-registry';
import { GatewayState } from '../core/state/gateway-state';

/**
 * MCP at `/mcp`: Streamable HTTP, plain WebSocket frames and the spec's envelope, and the spec's
 * dedicated WebSocket listener. Every method is written once (`methods/`) and bound to each SDK
 * generation by its revision's binder (`revisions/`); each transport picks a binder (`transports/`).
 * See README.md beside this file.
 */
@Module({
  imports: [HealthModule, FleetModule],
  controllers: [McpController, DeviceMcpController],
  providers: [
    McpMethods,
    McpTasks,
    Sdk1Binder,
    Sdk2Binder,
    McpGateway,
    McpHttpSessions,
    ModernHttpRequests,
    {
      provide: MCP_HTTP_SESSION_STORE,
      inject: [GatewayState, GATEWAY_CONFIG],
      useFactory: (state: GatewayState, { session, mcp }: GatewayConfig) => {
        const local = () => new LocalMcpHttpSessionStore();
        // MCP turned off opens no Redis connection for it.
        return mcp.enabled
          ? state.choose<McpHttpSessionStore | Promise<McpHttpSessionStore>>({
              memory: local,
              redis: (redis) => RedisMcpHttpSessionStore.connect(redis, session.timeoutMs),
            })
          : local();
      },
    },
    McpDedicatedListener,
    McpHeartbeatInterceptor,
    McpAuthGuard,
    McpEnabledGuard,
  ],
})
export class McpModule implements OnModuleInit {
  constructor(
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
    private readonly tokens: AccessTokenService,
    private readonly errorFormats: HttpErrorFormats,
    private readonly http: HttpAdapterHost,
    private readonly checks: HealthChecks,
    private readonly indicators: HealthIndicatorService,
    private readonly connections: ConnectionRegistry,
    private readonly httpSessions: McpHttpSessions,
    private readonly protocols: ProtocolRegistry,
  ) {}

  onModuleInit(): void {
    this.protocols.declare(MCP_DECLARATION);
    this.errorFormats.register(MCP_PATH, mcpHttpErrorBody);
    const context = { sharedTokens: this.tokens.enabled, served: Boolean(this.http.httpAdapter) };
    this.tokens.defineRealm(MCP_REALM, mcpRealmTokens(this.config, context, new Logger('MCP')));
    if (this.config.mcp.enabled) {
      this.checks.add('mcp', () => {
        const websocketConnections = this.connections.count(MCP_PROTOCOL);
        return this.indicators.check('mcp').up({ websocket_connections: websocketConnections, http_sessions: this.httpSessions.size });
      });
    }
  }
}
