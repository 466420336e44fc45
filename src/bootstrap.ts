import { Logger, Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { Server } from 'http';
import type { AddressInfo } from 'net';
import { GATEWAY_CONFIG, GatewayConfig, hasTokens, logSettingsFrom } from './config/gateway-config';
import { GatewayLogger } from './core/logging/gateway-logger';
import { startupSummary } from './core/logging/startup-summary';
import { ProtocolRegistry } from './core/protocols/protocol-registry';
import { GatewayWsAdapter } from './core/ws/gateway-ws.adapter';
import { isLoopbackHost } from './shared/loopback';
import { limitRequestHeaders } from './core/http/request-header-deadline';
import { serveOpenApi } from './core/http/openapi';

export interface GatewayAppOptions {
  /**
   * Stop gracefully on SIGTERM/SIGINT (close every socket with a close frame, exit 0).
   * Default true; tests that run several apps in one process turn it off.
   */
  handleSignals?: boolean;
}

/**
 * The Nest app `createGatewayApp()` gives: Nest's Express application, whose `listen()` without
 * arguments listens where the configuration says (`CLOUD_HOST`, `CLOUD_PORT`), so an app built
 * on the gateway honours the same settings as the gateway itself.
 */
export interface GatewayApp extends NestExpressApplication {
  /** Listens on `CLOUD_HOST:CLOUD_PORT` (default `0.0.0.0:9400`), or settings given to `forRoot()`. */
  listen(): Promise<Server>;
  listen(port: number | string, callback?: () => void): Promise<Server>;
  listen(port: number | string, hostname: string, callback?: () => void): Promise<Server>;
}

/** Longest a graceful shutdown may take before the process gives up and exits 1. */
const SHUTDOWN_DEADLINE_MS = 30_000;

/**
 * Creates a Nest app around `rootModule` (which must import `GatewayModule.forRoot()`), wired
 * the way the gateway needs: its WebSocket adapter, its logger (JSON bodies are parsed after
 * authentication, by `JsonBodyInterceptor`), graceful shutdown, and a start-up summary once it listens. Call `listen()` on the result.
 */
export async function createGatewayApp(rootModule: Type<unknown>, options: GatewayAppOptions = {}): Promise<GatewayApp> {
  const app = await NestFactory.create<NestExpressApplication>(rootModule, {
    // Boot logs wait for the configured logger; if the boot fails they go out through this one.
    logger: new GatewayLogger(logSettingsFrom(process.env)),
    bufferLogs: true,
    abortOnError: false,
    bodyParser: false,
    // Once sockets are closed and the drain is over, idle keep-alive HTTP connections end with the server instead of holding its close.
    forceCloseConnections: true,
  });
  let config: GatewayConfig;
  try {
    config = app.get<GatewayConfig>(GATEWAY_CONFIG);
  } catch {
    await app.close();
    throw new Error('createGatewayApp: the root module must import GatewayModule.forRoot()');
  }
  app.useLogger(new GatewayLogger(config.server));
  limitRequestHeaders(app.getHttpServer() as Server, config.server.requestHeaders);
  app.useWebSocketAdapter(new GatewayWsAdapter(app));
  serveOpenApi(app, config);
  if (options.handleSignals !== false) stopOnSignals(app);
  summariseOnListening(app, config);
  return listeningWhereConfigured(app, config);
}

/**
 * The app with `listen()` defaulting to the configured address. Nest hands out its app behind a
 * proxy that ignores property writes, so the method is put in front of it with a proxy too.
 */
function listeningWhereConfigured(app: NestExpressApplication, config: GatewayConfig): GatewayApp {
  const listenWhereConfigured = (...args: unknown[]): Promise<Server> =>
    args.length === 0 ? app.listen(config.server.port, config.server.host) : (app.listen as (...given: unknown[]) => Promise<Server>)(...args);
  return new Proxy(app, {
    get: (target, property, receiver) => (property === 'listen' ? listenWhereConfigured : Reflect.get(target, property, receiver)),
  }) as GatewayApp;
}

/** Where everything is, once the port is known (port 0 picks one); for whoever starts the app. */
function summariseOnListening(app: NestExpressApplication, config: GatewayConfig): void {
  const server = app.getHttpServer() as Server;
  server.once('listening', () => {
    const logger = new Logger('Gateway');
    for (const line of startupSummary(config, server.address() as AddressInfo, app.get(ProtocolRegistry))) logger.log(line);
    if (!hasTokens(config.auth) && !isLoopbackHost(config.server.host)) {
      logger.warn(
        `NO AUTHENTICATION on ${config.server.host} (ALLOW_UNAUTHENTICATED=true): anyone who reaches it may use the model and every tool. Set AUTH_TOKENS.`,
      );
    }
  });
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
