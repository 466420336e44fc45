import { ConfigurableModuleBuilder } from '@nestjs/common';
import type { EnvironmentInput } from './config/environment';

/** Options of `GatewayModule.forRoot()` / `forRootAsync()`. */
export interface GatewayModuleOptions {
  /**
   * Settings by their environment-variable names (`CLOUD_PORT`, `AUTH_TOKENS`, ...). They take
   * precedence over process.env and `.env`, and are validated the same way.
   */
  settings?: EnvironmentInput;
}

export const { ConfigurableModuleClass: ConfigurableGatewayModule, MODULE_OPTIONS_TOKEN: GATEWAY_MODULE_OPTIONS } =
  new ConfigurableModuleBuilder<GatewayModuleOptions>().setClassMethodName('forRoot').setFactoryMethodName('createGatewayOptions').build();
