import { Logger } from '@nestjs/common';
import { randomUUID } from 'crypto';
import type { IncomingMessage, Server as HttpServer } from 'http';
import { STATUS_CODES } from 'http';
import { match, MatchFunction } from 'path-to-regexp';
import type { Duplex } from 'stream';
import type { WebSocketServer } from 'ws';
import { GatewayConnection } from './connection';
import type { ConnectionRegistry } from './connection-registry';
import type { FrameDispatcher } from './frame-dispatcher';
import type { ProtocolGatewayHooks, ProtocolRouteOptions } from './protocol-gateway.decorator';
import { UpgradeContext, UpgradeGuard, UpgradeRefusedException } from './upgrade-guard';

/** Close code the gateway sends when a connection cannot be set up ("internal error"). */
export const CLOSE_INTERNAL_ERROR = 1011;

/** One WebSocket route: where it is, who may upgrade, and who serves its connections. */
export interface WsRoute {
  options: ProtocolRouteOptions;
  patterns: MatchFunction<Partial<Record<string, string>>>[];
  /** `ws`'s server in `noServer` mode: it completes handshakes, nothing more. */
  server: WebSocketServer;
  guards: UpgradeGuard[];
  gateway: ProtocolGatewayHooks;
  dispatcher: FrameDispatcher;
}

interface FoundRoute {
  route: WsRoute;
  params: Record<string, string>;
}

/** Which route serves an upgrade to `pathname`; throws on a malformed path. */
type RouteFinder = (pathname: string) => FoundRoute | undefined;

/** The path parameters of the first pattern that matches `pathname`. */
function matchAny(patterns: WsRoute['patterns'], pathname: string): Record<string, string> | undefined {
  for (const pattern of patterns) {
    const result = pattern(pathname);
    if (result) return result.params as Record<string, string>;
  }
  return undefined;
}

export const compilePatterns = (paths: string[]): WsRoute['patterns'] =>
  paths.map((pattern) => match(pattern, { decode: decodeURIComponent }));

/**
 * Upgrades on the gateway's HTTP servers: routed by path pattern (404 for unknown paths), checked
 * by the route's guards before any socket exists (refusals are HTTP statuses), refused with 503
 * once shutting down. An accepted socket becomes a {@link GatewayConnection}: registered, handed
 * to its gateway (`onOpen`), its frames to the route's dispatcher, and let go (`onClose`) when it
 * closes. Routes may also be served on further HTTP servers ({@link serveOn}), for protocols whose
 * spec has a listener of its own.
 */
export class UpgradeRouter {
  private readonly logger = new Logger('WebSocket');
  private readonly routes: WsRoute[] = [];

  constructor(
    private readonly registry: ConnectionRegistry,
    /** Whether upgrades are refused (503) now: the gateway drains or shuts down. */
    private readonly refusing: () => boolean,
  ) {}

  add(route: WsRoute): void {
    this.routes.push(route);
  }

  /** The route whose `ws` server is `server`. */
  routeOf(server: WebSocketServer): WsRoute | undefined {
    return this.routes.find((route) => route.server === server);
  }

  /** Routes the upgrades of `server` to every route, by path. */
  listen(server: HttpServer): void {
    server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
      void this.upgrade(request, socket, head, (pathname) => this.find(pathname));
    });
  }

  /**
   * Serves the routes at `routePath` on `server` too, at `paths` (patterns, `routePath` itself by
   * default), through the same guards, counts and frame handling. Requests that are not upgrades
   * are left to `server`'s own handler.
   */
  serveOn(server: HttpServer, routePath: string, paths: string[] = [routePath]): void {
    const route = this.routes.find((candidate) => candidate.options.path === routePath);
    if (!route) throw new Error(`No WebSocket gateway serves route "${routePath}"`);
    const patterns = compilePatterns(paths);
    server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
      void this.upgrade(request, socket, head, (pathname) => {
        const params = matchAny(patterns, pathname);
        return params && { route, params };
      });
    });
  }

  private find(pathname: string): FoundRoute | undefined {
    for (const route of this.routes) {
      const params = matchAny(route.patterns, pathname);
      if (params) return { route, params };
    }
    return undefined;
  }

  private async upgrade(request: IncomingMessage, socket: Duplex, head: Buffer, findRoute: RouteFinder): Promise<void> {
    // A client that resets mid-handshake must not take the process down.
    socket.on('error', (error) => this.logger.debug?.(`Upgrade socket error: ${error.message}`));
    if (this.refusing()) return refuse(socket, 503, 'Server is shutting down');
    let url: URL;
    let found: FoundRoute | undefined;
    try {
      url = new URL(request.url ?? '/', 'http://gateway.invalid');
      found = findRoute(url.pathname);
    } catch {
      return refuse(socket, 400, 'Malformed request path');
    }
    if (!found) return refuse(socket, 404, `No WebSocket endpoint at ${url.pathname}`);

    const { route, params } = found;
    const { protocol } = route.options;
    const context: UpgradeContext = { request, url, params, protocol, openConnections: this.registry.count(protocol) };
    let refusal: UpgradeRefusedException | undefined;
    try {
      for (const guard of route.guards) await guard.canUpgrade(context);
    } catch (error) {
      if (!(error instanceof UpgradeRefusedException)) {
        this.logger.error(`Upgrade guard failed on ${url.pathname}: ${(error as Error).stack}`);
        return refuse(socket, 500, 'Internal error');
      }
      if (error.closeCode === undefined) return refuse(socket, error.status, error.message, error.headers);
      refusal = error;
    }
    if (socket.destroyed) return;
    route.server.handleUpgrade(request, socket, head, (client) => {
      if (refusal) return client.close(refusal.closeCode, refusal.message);
      const connection = new GatewayConnection(client, { id: randomUUID(), protocol, route: route.options.path, params, request });
      connection.principal = context.principal;
      this.accept(route, connection);
    });
  }

  private accept(route: WsRoute, connection: GatewayConnection): void {
    const { socket } = connection;
    this.registry.add(connection);
    // Errors on a client socket are its protocol faults (an oversized or invalid frame); `ws`
    // closes the socket with the right code itself, so they are worth one line, not a stack.
    socket.on('error', (error: Error & { code?: string }) =>
      this.logger.warn(`Closed a client for a protocol error: ${error.message} (${error.code ?? 'no code'})`),
    );
    socket.on('message', (raw: Buffer) => void route.dispatcher.dispatch(connection, raw));
    connection.onClose(() => {
      this.registry.delete(connection);
      try {
        route.gateway.onClose?.(connection);
      } catch (error) {
        this.logger.error(`${connection.protocol} connection close failed: ${(error as Error)?.stack ?? error}`);
      }
    });
    try {
      route.gateway.onOpen?.(connection);
    } catch (error) {
      this.logger.error(`${connection.protocol} connection setup failed: ${(error as Error)?.stack ?? error}`);
      connection.close(CLOSE_INTERNAL_ERROR, 'Internal error');
    }
  }
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

