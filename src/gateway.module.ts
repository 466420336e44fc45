import { Global, MiddlewareConsumer, Module, NestModule, RequestMethod } from '@nestjs/common';
import { ConfigModule, ConfigService } from '@nestjs/config';
import { ENVIRONMENT_VARIABLE_NAMES } from './config/environment';
import { GATEWAY_CONFIG, loadGatewayConfig } from './config/gateway-config';
import { CoreModule } from './core/core.module';
import { OriginMiddleware } from './core/http/origin.middleware';
import { TraceContextMiddleware } from './core/tracing/trace-context.middleware';
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
import { XiaozhiModule } from './xiaozhi/xiaozhi.module';
import { UpstreamModule } from './upstream/upstream.module';

/**
 * The gateway as one importable module: the configuration, the core ({@link CoreModule}: the
 * tool catalogue, auth, limits, where state lives), health, the built-in tools and every
 * protocol. Global, so that a user's own modules can inject `ToolRegistryService` and the config
 * without importing anything else.
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
    CoreModule,
    HealthModule,
    IdentityModule,
    BuiltinToolsModule,
    // The protocols declare themselves in this order, the startup summary's (see ProtocolRegistry).
    LlmGatewayModule,
    FleetModule,
    RemindersModule.register({ imports: [FleetModule] }),
    XiaozhiModule,
    McpModule,
    LiteMcpModule,
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
  ],
  exports: [GATEWAY_CONFIG, CoreModule, HealthModule],
})
export class GatewayModule extends ConfigurableGatewayModule implements NestModule {
  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(OriginMiddleware).forRoutes({ path: '{*path}', method: RequestMethod.ALL });
    consumer.apply(TraceContextMiddleware).forRoutes({ path: '{*path}', method: RequestMethod.ALL });
  }
}
