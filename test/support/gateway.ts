import { DynamicModule, Module, Type } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { AddressInfo } from 'net';
import { createGatewayApp } from '../../src/bootstrap';
import type { EnvironmentInput } from '../../src/config/environment';
import { CalculatorModule } from '../../src/examples/calculator/calculator.module';
import { GatewayModule } from '../../src/gateway.module';

export interface RunningGateway {
  app: NestExpressApplication;
  port: number;
  http(path: string): string;
  ws(path: string): string;
  close(): Promise<void>;
}

/**
 * Settings every test gateway starts from: quiet, loopback only, no dedicated MCP listener, and
 * sessions in memory whatever the environment says (a test that wants Redis passes REDIS_URL).
 */
export const TEST_SETTINGS: EnvironmentInput = {
  CLOUD_HOST: '127.0.0.1',
  CLOUD_PORT: 0,
  CLOUD_LOG_LEVEL: 'ERROR',
  MCP_WS_PORT: 0,
  REDIS_URL: '',
};

/**
 * Boots the real gateway on 127.0.0.1, port 0, with `settings` over {@link TEST_SETTINGS} and
 * `imports` beside `GatewayModule` (the calculator example by default). `port` is for a gateway
 * whose settings must name its own address (`PUBLIC_URL`).
 */
export async function startGateway(
  settings: EnvironmentInput = {},
  imports: (Type<unknown> | DynamicModule)[] = [CalculatorModule],
  root: DynamicModule = GatewayModule.forRoot({ settings: { ...TEST_SETTINGS, ...settings } }),
  port = 0,
): Promise<RunningGateway> {
  @Module({ imports: [root, ...imports] })
  class TestAppModule {}

  const app = await createGatewayApp(TestAppModule, { handleSignals: false });
  try {
    await app.listen(port, '127.0.0.1');
  } catch (error) {
    // A module that fails to initialise leaves the rest of the app running: stop it.
    await app.close().catch(() => undefined);
    throw error;
  }
  const { port: bound } = app.getHttpServer().address() as AddressInfo;
  return {
    app,
    port: bound,
    http: (path) => `http://127.0.0.1:${bound}${path}`,
    ws: (path) => `ws://127.0.0.1:${bound}${path}`,
    close: () => app.close(),
  };
}
