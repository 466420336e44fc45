import { Global, Module } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_INTERCEPTOR, DiscoveryModule } from '@nestjs/core';
import { AuditService } from './audit/audit.service';
import { BudgetService } from './budgets/budget.service';
import { AccessTokenService } from './auth/access-token.service';
import { BearerAuthGuard } from './auth/bearer-auth.guard';
import { DefaultAuthGuard } from './auth/default-auth.guard';
import { DeferrableBearerAuthGuard } from './auth/deferrable-bearer-auth.guard';
import { MessageAuthenticator } from './auth/message-authenticator';
import { TokenExpiryService } from './auth/token-expiry.service';
import { ContextCatalogueService } from './context/context-catalogue.service';
import { GatewayHttpExceptionFilter } from './http/gateway-http-exception.filter';
import { HttpErrorFormats } from './http/http-error-formats';
import { JsonBodyInterceptor } from './http/json-body.interceptor';
import { OriginPolicy } from './http/origin-policy';
import { DrainService } from './lifecycle/drain.service';
import { RateLimitService } from './limits/rate-limit.service';
import { ProtocolRegistry } from './protocols/protocol-registry';
import { StateModule } from './state/state.module';
import { ToolCallService } from './tools/tool-call.service';
import { ToolDiscoveryService } from './tools/tool-discovery.service';
import { ToolRegistryService } from './tools/tool-registry.service';
import { TracingService } from './tracing/tracing.service';
import { ConnectionRegistry } from './ws/connection-registry';
import { HeartbeatInterceptor } from './ws/heartbeat.interceptor';

/** What every protocol stands on, injectable everywhere (a user's modules included). */
const CORE_SERVICES = [
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
  ProtocolRegistry,
  OriginPolicy,
  ConnectionRegistry,
  DrainService,
  AuditService,
  TracingService,
  RateLimitService,
  BudgetService,
];

/**
 * The protocol-neutral core as one global module: the catalogue and how a call runs, auth,
 * limits, connections, the protocols served ({@link ProtocolRegistry}), drain, audit and
 * traces, where state lives ({@link StateModule}), the guard, error filter and body interceptor
 * every HTTP route gets (a bearer token unless the route is `@Public()`), and the discovery of
 * `@Tool()` methods. It needs `GATEWAY_CONFIG` (which `GatewayModule` provides).
 */
@Global()
@Module({
  imports: [DiscoveryModule, StateModule],
  providers: [
    ...CORE_SERVICES,
    ToolDiscoveryService,
    { provide: APP_GUARD, useClass: DefaultAuthGuard },
    { provide: APP_FILTER, useClass: GatewayHttpExceptionFilter },
    { provide: APP_INTERCEPTOR, useClass: JsonBodyInterceptor },
  ],
  exports: [...CORE_SERVICES, StateModule],
})
export class CoreModule {}
