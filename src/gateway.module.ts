import { Global, MiddlewareConsumer, Module, NestModule, RequestMethod } from '@nestjs/common';
import { ConfigModule, ConfigService } from '@nestjs/config';
import { APP_FILTER, APP_INTERCEPTOR, DiscoveryModule } from '@nestjs/core';
import { ENVIRONMENT_VARIABLE_NAMES } from './config/environment';
import { GATEWAY_CONFIG, GatewayConfig, loadGatewayConfig } from './config/gateway-config';
import { AuditService } from './core/audit/audit.service';
import { AccessTokenService } from './core/auth/access-token.service';
import { BearerAuthGuard } from './core/auth/bearer-auth.guard';
import { DeferrableBearerAuthGuard } from './core/auth/deferrable-bearer-auth.guard';
import { GatewayHttpExceptionFilter } from './core/http/gateway-http-exception.filter';
import { HttpErrorFormats } from './core/http/http-error-formats';
import { OriginMiddleware } from './core/http/origin.middleware';
import { OriginPolicy } from './core/http/origin-policy';
import { ConnectionRegistry } from './core/ws/connection-registry';
import { DrainService } from './core/lifecycle/drain.service';
import { RateLimitService } from './core/limits/rate-limit.service';
import { LlmService } from './assistant/llm/llm.service';
import { SystemPromptService } from './assistant/llm/system-prompt.service';
import { CharacterCatalogueService } from './assistant/roleplay/character-catalogue.service';
import { MemorySessionStore } from './assistant/session/memory-session.store';
import { RedisSessionPresence } from './assistant/session/redis-session-presence';
import { RedisSessionStore } from './assistant/session/redis-session.store';
import { LocalSessionPresence, SESSION_PRESENCE } from './assistant/session/session-presence';
import { SESSION_STORE } from './assistant/session/session-store';
import { isCapped, SessionService } from './assistant/session/session.service';
import { ToolCallService } from './core/tools/tool-call.service';
import { ToolDiscoveryService } from './core/tools/tool-discovery.service';
import { ToolRegistryService } from './core/tools/tool-registry.service';
import { ContextCatalogueService } from './core/context/context-catalogue.service';
import { TraceContextMiddleware } from './core/tracing/trace-context.middleware';
import { TracingService } from './core/tracing/tracing.service';
import { CatalogueModule } from './catalogue/catalogue.module';
import { ConsoleModule } from './console/console.module';
import { ConfigurableGatewayModule, GATEWAY_MODULE_OPTIONS, GatewayModuleOptions } from './gateway-module.options';
import { HealthModule } from './health/health.module';
import { IdentityModule } from './identity/identity.module';
import { LiteMcpModule } from './litemcp/litemcp.module';
import { LlmGatewayModule } from './llm-gateway/llm-gateway.module';
import { FleetModule } from './fleet/fleet.module';
import { RemindersModule } from './fleet/reminders/reminders.module';
import { McpModule } from './mcp/mcp.module';
import { MetricsModule } from './metrics/metrics.module';
import { BuiltinToolsModule } from './tools/builtin-tools.module';
import { UtcpModule } from './utcp/utcp.module';
import { UpstreamModule } from './upstream/upstream.module';
import { HeartbeatInterceptor } from './core/ws/heartbeat.interceptor';
import { MessageAuthenticator } from './core/auth/message-authenticator';
import { TokenExpiryService } from './core/auth/token-expiry.service';
import { JsonBodyInterceptor } from './core/http/json-body.interceptor';

/** The core services every module may inject (the module is global). */
const SHARED_CORE = [
  ToolRegistryService,
  ContextCatalogueService,
  ToolCallService,
  AccessTokenService,
  BearerAuthGuard,
  DeferrableBearerAuthGuard,
  MessageAuthenticator,
  TokenExpiryService,
  HeartbeatInterceptor,
  HttpErrorFormats,
  OriginPolicy,
  SessionService,
  LlmService,
  SystemPromptService,
  CharacterCatalogueService,
  ConnectionRegistry,
  DrainService,
  AuditService,
  TracingService,
  RateLimitService,
];

/**
 * The gateway as one importable module: configuration, the tool catalogue, auth, health, the
 * built-in tools and every protocol. Global, so that a user's own modules can inject
 * `ToolRegistryService` and the config without importing anything else.
 *
 * @example
 * ```ts
 * @Module({ imports: [GatewayModule.forRoot({ settings: { AUTH_TOKENS: 'secret' } }), MyToolsModule] })
 * export class AppModule {}
 * ```
 */
@Global()
@Module({
  imports: [
    ConfigModule.forRoot({ envFilePath: '.env' }),
    DiscoveryModule,
    HealthModule,
    IdentityModule,
    BuiltinToolsModule,
    LiteMcpModule,
    LlmGatewayModule,
    FleetModule,
    RemindersModule.register({ imports: [FleetModule] }),
    McpModule,
    UtcpModule,
    UpstreamModule,
    CatalogueModule,
    ConsoleModule,
    MetricsModule,
  ],
  providers: [
    {
      provide: GATEWAY_CONFIG,
      inject: [ConfigService, GATEWAY_MODULE_OPTIONS],
      useFactory: (env: ConfigService, options: GatewayModuleOptions) =>
        loadGatewayConfig(Object.fromEntries(ENVIRONMENT_VARIABLE_NAMES.map((name) => [name, env.get(name)])), options.settings),
    },
    {
      provide: SESSION_STORE,
      inject: [GATEWAY_CONFIG],
      useFactory: ({ session }: GatewayConfig) =>
        session.redisUrl
          ? RedisSessionStore.connect(session.redisUrl, session.redisKeyPrefix, session.timeoutMs)
          : new MemorySessionStore(session.timeoutMs, Date.now, (owner) => isCapped(owner, session.maxPerPrincipal)),
    },
    {
      provide: SESSION_PRESENCE,
      inject: [GATEWAY_CONFIG],
      useFactory: ({ session }: GatewayConfig) =>
        session.redisUrl ? RedisSessionPresence.connect(session.redisUrl, session.redisKeyPrefix) : new LocalSessionPresence(),
    },
    { provide: APP_FILTER, useClass: GatewayHttpExceptionFilter },
    { provide: APP_INTERCEPTOR, useClass: JsonBodyInterceptor },
    ToolDiscoveryService,
    ...SHARED_CORE,
  ],
  exports: [GATEWAY_CONFIG, SESSION_STORE, HealthModule, ...SHARED_CORE],
})
export class GatewayModule extends ConfigurableGatewayModule implements NestModule {
  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(OriginMiddleware).forRoutes({ path: '{*path}', method: RequestMethod.ALL });
    consumer.apply(TraceContextMiddleware).forRoutes({ path: '{*path}', method: RequestMethod.ALL });
  }
}
