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

// What a protocol of your own builds on: docs/architecture.md, "Adding a protocol".
export { ProtocolGateway, PER_PROTOCOL_CAP, WS_AUTH_DEADLINE } from './core/ws/protocol-gateway.decorator';
export type {
  AuthByMessageOptions,
  ConnectionCapOptions,
  OversizedFrameHandling,
  ProtocolGatewayHooks,
  ProtocolGatewayOptions,
  SerialOptions,
} from './core/ws/protocol-gateway.decorator';
export { OnFrame } from './core/ws/on-frame.decorator';
export type { FrameHandlerOptions } from './core/ws/on-frame.decorator';
export type { FrameConnection, GatewayConnection } from './core/ws/connection';
export { ConnectionRegistry } from './core/ws/connection-registry';
export { UpgradeRefusedException } from './core/ws/upgrade-guard';
export type { UpgradeContext, UpgradeGuard } from './core/ws/upgrade-guard';
export { ToolCallService } from './core/tools/tool-call.service';
export { ToolCallScope } from './core/tools/tool-call-scope';
export { describeException } from './core/errors/describe-exception';
export type { DescribedError } from './core/errors/describe-exception';
export { thenMaybe } from './core/maybe-promise';
export type { MaybePromise } from './core/maybe-promise';
export { ProtocolRegistry } from './core/protocols/protocol-registry';
export type { ProtocolDeclaration, ProtocolSummaryContext } from './core/protocols/protocol-registry';
export { GatewayProtocol } from './core/auth/gateway-protocol.decorator';
export { Public } from './core/auth/route-access';
export { CallScope, ProtocolController } from './core/http/protocol-controller.decorator';
export type { ProtocolControllerOptions } from './core/http/protocol-controller.decorator';
export { HttpErrorFormats } from './core/http/http-error-formats';
export type { HttpErrorFormatter } from './core/http/http-error-formats';
