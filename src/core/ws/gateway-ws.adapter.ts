import { upgradeGuardsOf } from '../auth/route-access';
import { INestApplicationContext, Logger, NestInterceptor, Type } from '@nestjs/common';
import { WsAdapter } from '@nestjs/platform-ws';
import type { Server as HttpServer } from 'http';
import { WebSocketServer } from 'ws';
import { GATEWAY_CONFIG, GatewayConfig } from '../../config/gateway-config';
import { CORE_OBSERVER, CoreObserver } from '../observability/core-observer';
import { AccessTokenService } from '../auth/access-token.service';
import { optionalProvider } from '../optional-provider';
import { OriginPolicy } from '../http/origin-policy';
import { DrainService } from '../lifecycle/drain.service';
import type { TokenQuota } from './connection-caps';
import { ConnectionRegistry } from './connection-registry';
import { FrameDispatcher } from './frame-dispatcher';
import { OVERSIZED_FRAME_CEILING, PER_PROTOCOL_CAP, ProtocolGatewayHooks, ProtocolRouteOptions } from './protocol-gateway.decorator';
import { UpgradeGuard, UpgradeRefusedException } from './upgrade-guard';
import { Admission, compilePatterns, UpgradeRouter } from './upgrade-router';
import type { AdmittedPeer } from './admitted-request';
import type { ConnectionSocket } from './connection-socket';

/** Close code sent to clients when the server goes away (RFC 6455 "going away"). */
export const CLOSE_GOING_AWAY = 1001;

/**
 * Nest's WebSocket adapter for a multi-protocol gateway on one HTTP server. Nest still finds the
 * `@ProtocolGateway` classes and asks for a server per gateway (`create`); from there the
 * adapter does the work itself: the {@link UpgradeRouter} routes upgrades by path pattern
 * through each gateway's upgrade guards, and each route's {@link FrameDispatcher} takes frames
 * straight to the gateway's `@OnFrame` handlers, without Nest's per-message pipeline (guards,
 * pipes, interceptors, filters and observables per frame; see BENCHMARKS.md for what that
 * cost). At shutdown it refuses new upgrades (503), then closes every socket with 1001.
 */
export class GatewayWsAdapter extends WsAdapter {
  protected override readonly logger = new Logger('WebSocket');
  private readonly attachedServers: HttpServer[] = [];
  private router?: UpgradeRouter;
  private closing = false;

  constructor(private readonly app: INestApplicationContext) {
    super(app);
  }

  override create(port: number, options: Record<string, unknown> = {}): WebSocketServer {
    const route = options as unknown as Partial<ProtocolRouteOptions>;
    if (port !== 0 || !route.gateway || !route.path) return super.create(port, options);
    const config = this.app.get<GatewayConfig>(GATEWAY_CONFIG);
    const limit = config.server.maxMessageBytes;
    const answersOversized = route.oversizedFrames === 'answer';
    const server = new WebSocketServer({
      noServer: true,
      clientTracking: false,
      maxPayload: answersOversized ? limit * OVERSIZED_FRAME_CEILING : limit,
      handleProtocols: route.handleProtocols,
    });
    server.on('error', (error) => this.logger.error(error));
    const gateway = this.resolve<ProtocolGatewayHooks>(route.gateway, 'gateway');
    const routeOptions = route as ProtocolRouteOptions;
    const cap = routeOptions.connectionCap ?? PER_PROTOCOL_CAP;
    const capLimit = cap.limit(config);
    const capMessage = `Too many ${cap.label ?? routeOptions.protocol} connections: at most ${capLimit} (${cap.setting})`;
    this.routerFor().add({
      options: routeOptions,
      patterns: compilePatterns([routeOptions.path, ...(routeOptions.aliases ?? [])]),
      server,
      guards: upgradeGuardsOf(routeOptions.upgradeGuards, routeOptions.public).map((guard) => this.resolve<UpgradeGuard>(guard, 'upgrade guard')),
      gateway,
      dispatcher: new FrameDispatcher(gateway, answersOversized ? limit : undefined, this.observer()?.frameObserver(routeOptions.protocol), (type) =>
        this.resolve<NestInterceptor>(type, 'interceptor'),
      ),
      cap: {
        limit: capLimit,
        refusal: new UpgradeRefusedException(cap.status, capMessage, cap.closeCode === undefined ? { 'Retry-After': '1' } : {}, cap.closeCode),
      },
      authTimeoutMs: routeOptions.authByMessage?.timeoutMs(config),
      serial: routeOptions.serial,
    });
    return server;
  }

  /** Connections of the gateway's routes are set up by the router, not by Nest. */
  override bindClientConnect(server: WebSocketServer, callback: (...args: unknown[]) => void): void {
    if (!this.router?.routeOf(server)) super.bindClientConnect(server, callback);
  }

  /**
   * Closes the connections of `server`'s route with a close frame (1001; a client that does not
   * answer it is cut off after a grace period), then the server itself.
   */
  override async close(server: WebSocketServer): Promise<void> {
    this.closing = true;
    const route = this.router?.routeOf(server);
    if (!route) return super.close(server);
    const connections = this.app
      .get(ConnectionRegistry)
      .list(route.options.protocol)
      .filter((c) => c.route === route.options.path);
    await Promise.all(
      connections.map(
        (connection) =>
          new Promise<void>((resolve) => {
            connection.onClose(resolve);
            connection.close(CLOSE_GOING_AWAY, 'Server shutting down');
          }),
      ),
    );
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /**
   * Serves the gateway registered for `route` on `server` as well, at `paths` (see
   * `UpgradeRouter.serveOn`). The adapter owns `server` from here on and closes it after the
   * gateways at shutdown; call this once the gateways exist (`onApplicationBootstrap`).
   */
  attachServer(server: HttpServer, route: string, paths?: string[]): void {
    this.routerFor().serveOn(server, route, paths);
    this.attachedServers.push(server);
  }

  /**
   * Admits a connection that came by another transport to the gateway at `route`, through its
   * guards and caps (see `UpgradeRouter.admitSocket`); call this once the gateways exist.
   */
  admitSocket(route: string, socket: ConnectionSocket, peer: AdmittedPeer): Promise<Admission> {
    return this.routerFor().admitSocket(route, socket, peer);
  }

  /** After Nest's own cleanup, closes the attached servers (their sockets are gone by now). */
  override async dispose(): Promise<void> {
    await super.dispose();
    const servers = this.attachedServers.splice(0);
    await Promise.all(
      servers.map((server) => {
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeAllConnections();
        return closed;
      }),
    );
  }

  protected override ensureHttpServerExists(port: number, httpServer?: HttpServer): HttpServer | undefined {
    if (port !== 0 || !httpServer) return super.ensureHttpServerExists(port, httpServer);
    if (this.httpServersRegistry.has(port)) return undefined;
    this.httpServersRegistry.set(port, httpServer);
    this.routerFor().listen(httpServer);
    return httpServer;
  }

  private routerFor(): UpgradeRouter {
    if (!this.router) {
      const drain = this.app.get(DrainService);
      this.router = new UpgradeRouter(
        this.app.get(ConnectionRegistry),
        () => this.closing || drain.isDraining,
        this.app.get(OriginPolicy),
        this.app.get<GatewayConfig>(GATEWAY_CONFIG).connections,
        this.observer()?.refused,
        this.tokenQuotas(),
      );
      if (this.httpServer) this.ensureHttpServerExists(0, this.httpServer);
    }
    return this.router;
  }

  /** Named tokens' `max_connections`, when the app has tokens (an app built without `GatewayModule` may not). */
  private tokenQuotas(): ((principal: string) => TokenQuota | undefined) | undefined {
    const tokens = optionalProvider(this.app, AccessTokenService);
    if (!tokens) return undefined;
    return (principal) => {
      const { name, maxConnections } = tokens.grantOf(principal);
      return name === undefined || maxConnections === undefined ? undefined : { name, maxConnections };
    };
  }

  /** Who watches the core (the metrics), when the app has one (an app built without `GatewayModule` may not). */
  private observer(): CoreObserver | undefined {
    return optionalProvider<CoreObserver>(this.app, CORE_OBSERVER);
  }

  private resolve<T>(type: Type<unknown>, role: string): T {
    try {
      return this.app.get(type, { strict: false }) as T;
    } catch {
      throw new Error(`The ${role} ${type.name} is not a provider of any module; add it to a module's providers`);
    }
  }
}
