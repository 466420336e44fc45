/**
 * The gateway as a library: import `GatewayModule.forRoot()` into your own Nest app, add tools
 * with `@Tool()` methods on your providers, and start it with `createGatewayApp()`.
 */
export { GatewayModule } from './gateway.module';
export type { GatewayModuleOptions } from './gateway-module.options';
export { createGatewayApp } from './bootstrap';
export type { GatewayApp, GatewayAppOptions } from './bootstrap';
export { GATEWAY_CONFIG } from './config/gateway-config';
export type { GatewayConfig } from './config/gateway-config';
export { EnvironmentVariables, InvalidConfigurationError } from './config/environment';
export { Tool } from './core/tools/tool.decorator';
export type { ToolOptions } from './core/tools/tool.decorator';
export { ToolError } from './core/tools/tool-error';
export { ToolContentResult, textOfContent } from './core/tools/tool-content';
export { ToolRegistryService, ToolRegistrationError } from './core/tools/tool-registry.service';
export type {
  ToolCallContext,
  ToolCatalogueChange,
  ToolContentBlock,
  ToolDefinition,
  ToolExample,
  ToolOutcome,
  ToolSource,
  ToolSpec,
} from './core/tools/tool-definition';
export type { JsonSchema } from './core/tools/json-schema';
export { GatewayError, GatewayErrorCode } from './core/errors/gateway-error';
export { BearerAuthGuard } from './core/auth/bearer-auth.guard';
export { DeferrableBearerAuthGuard } from './core/auth/deferrable-bearer-auth.guard';
export { HealthChecks } from './health/health-checks';
export type { HealthEndpoint } from './health/health-checks';
export { CalculatorModule } from './examples/calculator/calculator.module';
