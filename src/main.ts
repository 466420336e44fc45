import 'reflect-metadata';
import { AppModule } from './app.module';
import { createGatewayApp } from './bootstrap';
import { StartupError } from './shared/startup-error';

/** The gateway as `npm start` runs it: listens on CLOUD_HOST:CLOUD_PORT and logs where everything is. */
async function main(): Promise<void> {
  const app = await createGatewayApp(AppModule);
  await app.listen();
}

main().catch((error: unknown) => {
  const message = error instanceof StartupError ? error.message : ((error as Error)?.stack ?? String(error));
  process.stderr.write(`Gateway failed to start: ${message}\n`);
  process.exit(1);
});
