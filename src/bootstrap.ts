import { Logger, Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { GATEWAY_CONFIG, GatewayConfig, logSettingsFrom } from './config/gateway-config';
import { GatewayLogger } from './core/logging/gateway-logger';
import { GatewayWsAdapter } from './core/ws/gateway-ws.adapter';

export interface GatewayAppOptions {
  /**
   * Stop gracefully on SIGTERM/SIGINT (close every socket with a close frame, exit 0).
   * Default true; tests that run several apps in one process turn it off.
   */
  handleSignals?: boolean;
}

/** Longest a graceful shutdown may take before the process gives up and exits 1. */
const SHUTDOWN_DEADLINE_MS = 30_000;

/**
 * Creates a Nest app around `rootModule` (which must import `GatewayModule.forRoot()`), wired
 * the way the gateway needs: its WebSocket adapter, its logger, body limits from the config,
 * and graceful shutdown. Call `listen()` on the result.
 */
export async function createGatewayApp(
  rootModule: Type<unknown>,
  options: GatewayAppOptions = {},
): Promise<NestExpressApplication> {
  const app = await NestFactory.create<NestExpressApplication>(rootModule, {
    // Boot logs wait for the configured logger; if the boot fails they go out through this one.
    logger: new GatewayLogger(logSettingsFrom(process.env)),
    bufferLogs: true,
    abortOnError: false,
    bodyParser: false,
  });
  let config: GatewayConfig;
  try {
    config = app.get<GatewayConfig>(GATEWAY_CONFIG);
  } catch {
    await app.close();
    throw new Error('createGatewayApp: the root module must import GatewayModule.forRoot()');
  }
  app.useLogger(new GatewayLogger(config.server));
  app.useBodyParser('json', { limit: config.server.maxMessageBytes });
  app.useWebSocketAdapter(new GatewayWsAdapter(app));
  if (options.handleSignals !== false) stopOnSignals(app);
  return app;
}

function stopOnSignals(app: NestExpressApplication): void {
  const logger = new Logger('Shutdown');
  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    logger.log(`${signal} received: closing connections`);
    setTimeout(() => {
      logger.error(`Shutdown did not finish within ${SHUTDOWN_DEADLINE_MS / 1000} s; exiting`);
      process.exit(1);
    }, SHUTDOWN_DEADLINE_MS).unref();
    app.close().then(
      () => {
        logger.log('Stopped');
        process.exit(0);
      },
      (error: Error) => {
        logger.error(`Shutdown failed: ${error.stack}`);
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}
