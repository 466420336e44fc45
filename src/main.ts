import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import type { AddressInfo } from 'net';
import { AppModule } from './app.module';
import { createGatewayApp } from './bootstrap';
import { StartupError } from './core/errors/startup-error';
import { GATEWAY_CONFIG, GatewayConfig } from './config/gateway-config';

async function main(): Promise<void> {
  const app = await createGatewayApp(AppModule);
  const { host, port } = app.get<GatewayConfig>(GATEWAY_CONFIG).server;
  await app.listen(port, host);
  const address = app.getHttpServer().address() as AddressInfo;
  new Logger('Gateway').log(`Listening on ${host}:${address.port}`);
}

main().catch((error: unknown) => {
  const message = error instanceof StartupError ? error.message : (error as Error)?.stack ?? String(error);
  process.stderr.write(`Gateway failed to start: ${message}\n`);
  process.exit(1);
});
