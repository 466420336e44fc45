import { INestApplicationContext, Logger, Type } from '@nestjs/common';
import { WsAdapter } from '@nestjs/platform-ws';
import type { MessageMappingProperties } from '@nestjs/websockets/gateway-metadata-explorer';
import { randomUUID } from 'crypto';
import type { IncomingMessage, Server as HttpServer } from 'http';
import { STATUS_CODES } from 'http';
import { match, MatchFunction } from 'path-to-regexp';
import type { Duplex } from 'stream';
import { Observable, Subscription } from 'rxjs';
import { WebSocket, WebSocketServer } from 'ws';
import { GATEWAY_CONFIG, GatewayConfig } from '../../config/gateway-config';
import { DrainService } from '../lifecycle/drain.service';
import { FrameEvent, parseFrame } from './frame-parser';
import { attachConnection, connectionOf, GatewayConnection } from './gateway-connection';
import { OVERSIZED_FRAME_CEILING, ProtocolGatewayOptions } from './protocol-gateway.decorator';
import { UpgradeGuard, UpgradeRefusedException } from './upgrade-guard';

/** Close code sent to clients when the server goes away (RFC 6455 "going away"). */
export const CLOSE_GOING_AWAY = 1001;

/** How long shutdown waits for clients to answer the close frame before cutting them off. */
const CLOSE_GRACE_MS = 2000;

interface Route {
  patterns: MatchFunction<Partial<Record<string, string>>>[];
  path: string;
  server: WebSocketServer;
  guards: UpgradeGuard[];
  /** Set on `answer` routes: frames above it reach the gateway as `FrameEvent.TOO_LARGE`. */
  softLimitBytes?: number;
}

interface FoundRoute {
  route: Route;
  params: Record<string, string>;
}

/** Which route serves an upgrade to `pathname` on one HTTP server; throws on a malformed path. */
type RouteFinder = (pathname: string) => FoundRoute | undefined;

/**
 * Nest's `WsAdapter`, extended for a multi-protocol gateway on one HTTP server:
 * - routes upgrades by path pattern (`/litemcp/:tool`) and aliases, 404 for unknown paths;
 * - runs each gateway's upgrade guards first, so refusals are HTTP statuses with no socket;
 * - routes frames on their `type`, with fallback events for malformed, untyped, unknown and
 *   oversized frames (see {@link FrameEvent}) instead of dropping them silently;
 * - from the start of a shutdown (the drain) refuses new upgrades (503), then closes every socket
 *   with a close frame (1001);
 * - serves chosen routes on further HTTP servers too ({@link attachServer}), for protocols whose
 *   spec has a listener of its own.
 */
export class GatewayWsAdapter extends WsAdapter {
  protected override readonly logger = new Logger('WebSocket');
  private readonly routes: Route[] = [];
  private readonly routeOfSocket = new WeakMap<WebSocket, Route>();
  private readonly attachedServers: HttpServer[] = [];
  private closing = false;
  private drain?: DrainService;

  constructor(private readonly app: INestApplicationContext) {
    super(app);
  }

  override create(port: number, options: Record<string, unknown> & Partial<ProtocolGatewayOptions> = {}): WebSocketServer {
    const { path, aliases = [], upgradeGuards = [], oversizedFrames = 'close', ...wsOptions } = options;
    if (port !== 0 || !path) return super.create(port, options);
    const config = this.app.get<GatewayConfig>(GATEWAY_CONFIG);
    this.drain ??= this.app.get(DrainService);
    const limit = config.server.maxMessageBytes;
    this.ensureHttpServerExists(0, this.httpServer);
    const server = new WebSocketServer({
      noServer: true,
      maxPayload: oversizedFrames === 'answer' ? limit * OVERSIZED_FRAME_CEILING : limit,
      ...wsOptions,
    });
    this.bindErrorHandler(server);
    this.routes.push({
      path,
      patterns: [path, ...aliases].map((pattern) => match(pattern, { decode: decodeURIComponent })),
      server,
      guards: upgradeGuards.map((guard) => this.resolveGuard(guard)),
      softLimitBytes: oversizedFrames === 'answer' ? limit : undefined,
    });
    return server;
  }

  override bindMessageHandlers(
    client: WebSocket,
    handlers: MessageMappingProperties[],
    transform: (data: unknown) => Observable<unknown>,
  ): void {
    const handlersByEvent = new Map(handlers.map((handler) => [handler.message as string, handler]));
    const limit = this.routeOfSocket.get(client)?.softLimitBytes;
    const running = new Set<Subscription>();
    const connection = connectionOf(client);

    client.on('message', (raw: Buffer, isBinary: boolean) => {
      const frame = parseFrame(isBinary ? raw : raw.toString('utf8'), limit);
      if (connection.receiveFrame) {
        try {
          connection.receiveFrame(frame);
        } catch (error) {
          this.logger.error(`Frame receiver of ${connection.route} threw: ${(error as Error)?.stack}`);
        }
        return;
      }
      const handler =
        handlersByEvent.get(frame.event) ??
        (frame.event.startsWith('#') ? undefined : handlersByEvent.get(FrameEvent.UNKNOWN_TYPE));
      if (!handler) return;
      let replies: Observable<unknown>;
      try {
        replies = transform(handler.callback(frame.data, frame.event));
      } catch (error) {
        this.logger.error(`Frame handler "${frame.event}" threw: ${(error as Error).stack}`);
        return;
      }
      const subscription = replies.subscribe({
        next: (reply) => {
          if (reply !== undefined && reply !== null && client.readyState === WebSocket.OPEN) {
            client.send(typeof reply === 'string' ? reply : JSON.stringify(reply));
          }
        },
        error: (error) => this.logger.error(`Frame handler "${frame.event}" failed: ${(error as Error)?.stack}`),
        complete: () => running.delete(subscription),
      });
      if (!subscription.closed) running.add(subscription);
    });
    client.once('close', () => {
      running.forEach((subscription) => subscription.unsubscribe());
      running.clear();
    });
  }

  /**
   * Errors on a client socket are the client's protocol faults (an oversized or invalid frame);
   * `ws` closes the socket with the right code itself, so they are worth one line, not a stack.
   */
  override bindErrorHandler(server: WebSocketServer): WebSocketServer {
    server.on('connection', (client: WebSocket) =>
      client.on('error', (error: Error & { code?: string }) =>
        this.logger.warn(`Closed a client for a protocol error: ${error.message} (${error.code ?? 'no code'})`),
      ),
    );
    server.on('error', (error) => this.logger.error(error));
    return server;
  }

  /** Closes every client of `server` with a close frame, then the server itself. */
  override async close(server: WebSocketServer): Promise<void> {
    this.closing = true;
    const clients = [...server.clients];
    await Promise.all(
      clients.map(
        (client) =>
          new Promise<void>((resolve) => {
            if (client.readyState === WebSocket.CLOSED) return resolve();
            const timer = setTimeout(() => {
              client.terminate();
              resolve();
            }, CLOSE_GRACE_MS);
            client.once('close', () => {
              clearTimeout(timer);
              resolve();
            });
            client.close(CLOSE_GOING_AWAY, 'Server shutting down');
          }),
      ),
    );
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /**
   * Serves the gateway registered for `route` on `server` as well, at `paths` (path-to-regexp
   * patterns, `route` itself by default): its upgrades go through the same guards, connection
   * count and frame handling as on the shared server. Requests that are not upgrades are left to
   * `server`'s own handler. The adapter owns `server` from here on and closes it after the
   * gateways at shutdown; call this once the gateways exist (`onApplicationBootstrap`).
   */
  attachServer(server: HttpServer, route: string, paths: string[] = [route]): void {
    const target = this.routes.find((candidate) => candidate.path === route);
    if (!target) throw new Error(`No WebSocket gateway serves route "${route}"`);
    const patterns: Route['patterns'] = paths.map((pattern) => match(pattern, { decode: decodeURIComponent }));
    const findRoute: RouteFinder = (pathname) => {
      const params = matchAny(patterns, pathname);
      return params && { route: target, params };
    };
    server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
      void this.upgrade(request, socket, head, findRoute);
    });
    this.attachedServers.push(server);
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
    httpServer.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
      void this.upgrade(request, socket, head, (pathname) => this.findRoute(pathname));
    });
    return httpServer;
  }

  private async upgrade(request: IncomingMessage, socket: Duplex, head: Buffer, findRoute: RouteFinder): Promise<void> {
    // A client that resets mid-handshake must not take the process down.
    socket.on('error', (error) => this.logger.debug?.(`Upgrade socket error: ${error.message}`));
    if (this.closing || this.drain?.isDraining) return refuse(socket, 503, 'Server is shutting down');
    let url: URL;
    try {
      url = new URL(request.url ?? '/', 'http://gateway.invalid');
    } catch {
      return refuse(socket, 400, 'Malformed request URL');
    }
    let found: FoundRoute | undefined;
    try {
      found = findRoute(url.pathname);
    } catch {
      return refuse(socket, 400, 'Malformed request path');
    }
    if (!found) return refuse(socket, 404, `No WebSocket endpoint at ${url.pathname}`);

    const { route, params } = found;
    const connection: GatewayConnection = { id: randomUUID(), route: route.path, params, request };
    let closeCode: number | undefined;
    let closeReason = '';
    try {
      for (const guard of route.guards) {
        await guard.canUpgrade({ request, url, params, openConnections: route.server.clients.size, connection });
      }
    } catch (error) {
      if (!(error instanceof UpgradeRefusedException)) {
        this.logger.error(`Upgrade guard failed on ${url.pathname}: ${(error as Error).stack}`);
        return refuse(socket, 500, 'Internal error');
      }
      if (error.closeCode === undefined) return refuse(socket, error.status, error.message, error.headers);
      closeCode = error.closeCode;
      closeReason = error.message;
    }
    if (socket.destroyed) return;
    route.server.handleUpgrade(request, socket, head, (client) => {
      if (closeCode !== undefined) return client.close(closeCode, closeReason);
      attachConnection(client, connection);
      this.routeOfSocket.set(client, route);
      route.server.emit('connection', client, request);
    });
  }

  private findRoute(pathname: string): FoundRoute | undefined {
    for (const route of this.routes) {
      const params = matchAny(route.patterns, pathname);
      if (params) return { route, params };
    }
    return undefined;
  }

  private resolveGuard(guard: Type<UpgradeGuard>): UpgradeGuard {
    try {
      return this.app.get(guard, { strict: false });
    } catch {
      throw new Error(`Upgrade guard ${guard.name} is not a provider of any module; add it to a module's providers`);
    }
  }
}

/** The path parameters of the first pattern that matches `pathname`. */
function matchAny(patterns: Route['patterns'], pathname: string): Record<string, string> | undefined {
  for (const pattern of patterns) {
    const result = pattern(pathname);
    if (result) return result.params as Record<string, string>;
  }
  return undefined;
}

/** Answers a refused upgrade with an HTTP status and a small JSON body, then drops the socket. */
function refuse(socket: Duplex, status: number, message: string, headers: Record<string, string> = {}): void {
  if (socket.destroyed) return;
  const body = JSON.stringify({ error: { status, message } });
  const lines = [
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}`,
    'Connection: close',
    'Content-Type: application/json',
    `Content-Length: ${Buffer.byteLength(body)}`,
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
  ];
  socket.once('finish', () => socket.destroy());
  socket.end(`${lines.join('\r\n')}\r\n\r\n${body}`);
}
