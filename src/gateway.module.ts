import { Global, Module } from '@nestjs/common';
import { ConfigModule, ConfigService } from '@nestjs/config';
import { APP_FILTER, DiscoveryModule } from '@nestjs/core';
import { ENVIRONMENT_VARIABLE_NAMES } from './config/environment';
import { GATEWAY_CONFIG, loadGatewayConfig } from './config/gateway-config';
import { AccessTokenService } from './core/auth/access-token.service';
import { BearerAuthGuard } from './core/auth/bearer-auth.guard';
import { DeferrableBearerAuthGuard } from './core/auth/deferrable-bearer-auth.guard';
import { GatewayHttpExceptionFilter } from './core/http/gateway-http-exception.filter';
import { HttpErrorFormats } from './core/http/http-error-formats';
import { ToolDiscoveryService } from './core/tools/tool-discovery.service';
import { ToolRegistryService } from './core/tools/tool-registry.service';
import { ConfigurableGatewayModule, GATEWAY_MODULE_OPTIONS, GatewayModuleOptions } from './gateway-module.options';
import { HealthModule } from './health/health.module';
import { LiteMcpModule } from './litemcp/litemcp.module';
import { BuiltinToolsModule } from './tools/builtin-tools.module';
import { UtcpModule } from './utcp/utcp.module';

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
    BuiltinToolsModule,
    LiteMcpModule,
    UtcpModule,
  ],
  providers: [
    {
      provide: GATEWAY_CONFIG,
      inject: [ConfigService, GATEWAY_MODULE_OPTIONS],
      useFactory: (env: ConfigService, options: GatewayModuleOptions) =>
        loadGatewayConfig(Object.fromEntries(ENVIRONMENT_VARIABLE_NAMES.map((name) => [name, env.get(name)])), options.settings),
    },
    ToolRegistryService,
    ToolDiscoveryService,
    AccessTokenService,
    BearerAuthGuard,
    DeferrableBearerAuthGuard,
    HttpErrorFormats,
    { provide: APP_FILTER, useClass: GatewayHttpExceptionFilter },
  ],
  exports: [GATEWAY_CONFIG, ToolRegistryService, AccessTokenService, BearerAuthGuard, DeferrableBearerAuthGuard, HttpErrorFormats],
})
export class GatewayModule extends ConfigurableGatewayModule {}
