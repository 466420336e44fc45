import { Logger } from '@nestjs/common';
import type { IncomingMessage, Server as HttpServer } from 'http';
import { STATUS_CODES } from 'http';
import { match, MatchFunction } from 'path-to-regexp';
import type { Duplex } from 'stream';
import type { WebSocketServer } from 'ws';
import type { ConnectionCapsConfig } from '../../config/gateway-config';
import { newId } from '../new-id';
import { admittedRequest, AdmittedPeer } from './admitted-request';
import { CLOSE_MESSAGE_TOO_BIG, CLOSE_POLICY_VIOLATION, ConnectionOrigin, GatewayConnection } from './connection';
import { ConnectionSocket, SOCKET_OPEN } from './connection-socket';
import { ConnectionCaps, TokenQuota } from './connection-caps';
import type { ConnectionRegistry } from './connection-registry';
import { boundAddressOf, OriginPolicy } from '../http/origin-policy';
import { runInTraceContext, traceContextOf } from '../tracing/trace-context';
import type { FrameDispatcher } from './frame-dispatcher';
import type { ProtocolGatewayHooks, ProtocolRouteOptions, SerialOptions } from './protocol-gateway.decorator';
import { RefusalListener, RefusalReason, refusalReasonOfStatus } from './refusal-reason';
import { UnauthenticatedBudget } from './unauthenticated-budget';
import { UpgradeContext, UpgradeGuard, UpgradeRefusedException } from './upgrade-guard';

/** Close code the gateway sends when a connection cannot be set up ("internal error"). */
export const CLOSE_INTERNAL_ERROR = 1011;

/** A route's cap on its open connections, with its settings read: the limit and what a client past it gets. */
export interface RouteCap {
  limit: number;
  refusal: UpgradeRefusedException;
}

/** One WebSocket route: where it is, who may upgrade, and who serves its connections, with what its options decide. */
export interface WsRoute {
  options: ProtocolRouteOptions;
  patterns: MatchFunction<Partial<Record<string, string>>>[];
  /** `ws`'s server in `noServer` mode: it completes handshakes, nothing more. */
  server: WebSocketServer;
  guards: UpgradeGuard[];
  gateway: ProtocolGatewayHooks;
  dispatcher: FrameDispatcher;
  cap: RouteCap;
  /** Counts a connection's principal, settled by its auth frame, against the caps (see {@link ConnectionOrigin.admit}). */
  admit: NonNullable<ConnectionOrigin['admit']>;
  /** The deadline of a client that authenticates by message, when the route has them. */
  authTimeoutMs?: number;
  serial?: SerialOptions;
}

interface FoundRoute {
  route: WsRoute;
  params: Record<string, string>;
}

/** What became of a connection offered by another transport ({@link UpgradeRouter.admitSocket}): accepted, or refused as its upgrade would have been. */
export type Admission = { connection: GatewayConnection } | { refused: { status: number; message: string } };

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

export const compilePatterns = (paths: string[]): WsRoute['patterns'] => paths.map((pattern) => match(pattern, { decode: decodeURIComponent }));

/**
 * Upgrades on the gateway's HTTP servers: refused with 503 once shutting down, with 403 from a
 * page or host name the {@link OriginPolicy} refuses, routed by path pattern (404 for unknown
 * paths), checked by the route's guards before any socket exists (refusals are HTTP statuses). An accepted socket becomes a {@link GatewayConnection}: registered, handed
 * to its gateway (`onOpen`), its frames to the route's dispatcher, and let go (`onClose`) when it
 * closes. Routes may also be served on further HTTP servers ({@link serveOn}), for protocols whose
 * spec has a listener of its own.
 */
export class UpgradeRouter {
  private readonly logger = new Logger('WebSocket');
  private readonly routes: WsRoute[] = [];
  private readonly caps: ConnectionCaps;

  constructor(
    private readonly registry: ConnectionRegistry,
    /** Whether upgrades are refused (503) now: the gateway drains or shuts down. */
    private readonly refusing: () => boolean,
    /** Which pages and host names may open sockets (403 otherwise), on every route. */
    private readonly origins: OriginPolicy,
    private readonly capsConfig: ConnectionCapsConfig,
    /** Hears every refused upgrade (the metrics). */
    private readonly onRefused: RefusalListener = () => undefined,
    quotaOf?: (principal: string) => TokenQuota | undefined,
  ) {
    this.caps = new ConnectionCaps(capsConfig, registry, quotaOf);
  }

  add(route: Omit<WsRoute, 'admit'>): void {
    // One function per route, shared by its connections, rather than a closure for each.
    const added: WsRoute = { ...route, admit: (connection, principal) => this.admit(added, connection, principal) };
    this.routes.push(added);
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

  /**
   * Admits a connection that came by another transport (a xiaozhi device over MQTT + UDP) to the
   * route at `routePath` as if it had upgraded there: refused while shutting down, checked by the
   * route's guards with a request made of what `peer` says of itself ({@link admittedRequest}),
   * counted against the route's cap and the shared caps, then accepted as an upgraded socket is
   * (registered, its messages to the route's dispatcher or `onBinary`, `onOpen` and `onClose`).
   * Origins are not checked: the transport has none. A refusal the route would answer with a
   * close code after the upgrade is a refusal here too; the transport tells its peer its own way.
   */
  async admitSocket(routePath: string, socket: ConnectionSocket, peer: AdmittedPeer): Promise<Admission> {
    const route = this.routes.find((candidate) => candidate.options.path === routePath);
    if (!route) throw new Error(`No WebSocket gateway serves route "${routePath}"`);
    const refused = (reason: RefusalReason, status: number, message: string): Admission => {
      this.onRefused(reason);
      return { refused: { status, message } };
    };
    if (this.refusing()) return refused('shutdown', 503, 'Server is shutting down');
    const request = admittedRequest(routePath, peer);
    const url = new URL(request.url ?? routePath, 'http://gateway.invalid');
    const params = matchAny(route.patterns, url.pathname) ?? {};
    const context: UpgradeContext = { request, url, params, protocol: route.options.protocol };
    try {
      for (const guard of route.guards) await guard.canUpgrade(context);
    } catch (error) {
      if (!(error instanceof UpgradeRefusedException)) {
        this.logger.error(`Upgrade guard failed on an admitted ${route.options.protocol} connection: ${(error as Error).stack}`);
        return refused('other', 500, 'Internal error');
      }
      return refused(refusalReasonOfStatus(error.status), error.status, error.message);
    }
    const full = context.principal === undefined ? undefined : this.capRefusal(route);
    if (full) return refused('cap', full.status, full.message);
    const capped = this.caps.atUpgrade(peer.remoteAddress, context.principal);
    if (capped) return refused('cap', capped.status, capped.message);
    if (socket.readyState !== SOCKET_OPEN) return refused('other', 499, 'The connection closed while it was admitted');
    return { connection: this.open(route, socket, params, request, context.principal) };
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
    const refused = (reason: RefusalReason, status: number, message: string, headers?: Record<string, string>) => {
      this.onRefused(reason);
      refuse(socket, status, message, headers);
    };
    if (this.refusing()) return refused('shutdown', 503, 'Server is shutting down');
    const foreign = this.origins.refusal(request.headers, boundAddressOf(request));
    if (foreign !== undefined) return refused('origin', 403, foreign);
    let url: URL;
    let found: FoundRoute | undefined;
    try {
      url = new URL(request.url ?? '/', 'http://gateway.invalid');
      found = findRoute(url.pathname);
    } catch {
      return refused('other', 400, 'Malformed request path');
    }
    if (!found) return refused('other', 404, `No WebSocket endpoint at ${url.pathname}`);

    const { route, params } = found;
    const { protocol } = route.options;
    const context: UpgradeContext = { request, url, params, protocol };
    let refusal: UpgradeRefusedException | undefined;
    try {
      for (const guard of route.guards) await guard.canUpgrade(context);
    } catch (error) {
      if (!(error instanceof UpgradeRefusedException)) {
        this.logger.error(`Upgrade guard failed on ${url.pathname}: ${(error as Error).stack}`);
        return refused('other', 500, 'Internal error');
      }
      if (error.closeCode === undefined) return refused(refusalReasonOfStatus(error.status), error.status, error.message, error.headers);
      this.onRefused(refusalReasonOfStatus(error.status));
      refusal = error;
    }
    // The route's own cap first, as its protocol's spec words it; then the caps every route shares.
    const full = refusal || context.principal === undefined ? undefined : this.capRefusal(route);
    if (full && full.closeCode === undefined) return refused('cap', full.status, full.message, full.headers);
    if (full) {
      this.onRefused('cap');
      refusal = full;
    }
    if (!refusal) {
      const capped = this.caps.atUpgrade(request.socket.remoteAddress, context.principal);
      if (capped) return refused('cap', capped.status, capped.message, { 'Retry-After': '1' });
    }
    if (socket.destroyed) return;
    const { principal } = context;
    route.server.handleUpgrade(request, socket, head, (client) => {
      if (refusal) client.close(refusal.closeCode, refusal.message);
      else this.open(route, client, params, request, principal, socket);
    });
  }

  /**
   * The connection of an accepted socket. Made here, not in {@link upgrade}, so that what its
   * closures keep for the connection's life is this scope, not the upgrade's (its URL, context
   * and refusal helpers): an idle device costs that much less.
   */
  private open(
    route: WsRoute,
    client: ConnectionSocket,
    params: Record<string, string>,
    request: IncomingMessage,
    principal: string | undefined,
    /** The upgraded TCP stream, whose bytes are counted before authentication; an admitted connection has none. */
    stream?: Duplex,
  ): GatewayConnection {
    const connection = new GatewayConnection(client, {
      id: newId(),
      protocol: route.options.protocol,
      route: route.options.path,
      params,
      request,
      maxBufferedBytes: this.capsConfig.maxBufferedBytes,
      maxCallsInFlight: this.capsConfig.maxCallsInFlight,
      serial: route.serial,
      admit: route.admit,
    });
    connection.principal = principal;
    if (principal === undefined) {
      if (stream) this.boundBeforeAuthentication(connection, stream);
      if (route.authTimeoutMs !== undefined) this.awaitAuthentication(route, connection, route.authTimeoutMs);
    }
    this.accept(route, connection);
    return connection;
  }

  /**
   * A principal proved by an auth frame: counted from now on against the caps it escaped at the
   * upgrade (per token, and the route's own). Returns why it is refused.
   */
  private admit(route: WsRoute, connection: GatewayConnection, principal: string): string | undefined {
    const capped = this.caps.forPrincipal(principal) ?? this.capRefusal(route);
    if (capped) return capped.message;
    this.registry.authenticated(connection, principal);
    return undefined;
  }

  /** The route's own cap, when its protocol holds as many authenticated connections as it allows. */
  private capRefusal(route: WsRoute): UpgradeRefusedException | undefined {
    return this.registry.count(route.options.protocol) >= route.cap.limit ? route.cap.refusal : undefined;
  }

  /** A socket that authenticates by message is closed if its auth frame does not come in time: in the protocol's words, or with 1008. */
  private awaitAuthentication(route: WsRoute, connection: GatewayConnection, timeoutMs: number): void {
    const deadline = setTimeout(() => {
      if (connection.principal !== undefined) return;
      if (route.gateway.onAuthTimeout) route.gateway.onAuthTimeout(connection, timeoutMs);
      else connection.close(CLOSE_POLICY_VIOLATION, `Authentication timeout: no auth frame within ${timeoutMs} ms`);
    }, timeoutMs);
    deadline.unref();
    connection.onClose(() => clearTimeout(deadline));
  }

  /**
   * A socket without a principal may send `WS_UNAUTHENTICATED_MAX_BYTES` in all before it
   * authenticates: counted off the network, before `ws` buffers a frame whole (an unfinished 16 MB
   * frame would otherwise be held until the auth deadline), so sockets without a token hold at
   * most that much each. Past it, or at the header of a frame that would go past it, the socket
   * stops being read and is sent a close frame (1009), then held, unread, for `WS_AUTH_TIMEOUT`
   * (less if its route's own auth deadline comes first), not cut a second later as other closes
   * are: its client must not get the next socket at once. What such clients cost the gateway is
   * mostly each new socket (its upgrade, its connection set up and torn down, the read it keeps,
   * collections: about 1.5 ms), and 300 from one address renewed every second delayed every other
   * client by tens of milliseconds; held, they cost what as many sockets that send nothing cost.
   * Counting stops at the first bytes read once the socket has authenticated. Listening here, in
   * the upgrade's callback, the budget sees the stream from its first byte.
   */
  private boundBeforeAuthentication(connection: GatewayConnection, socket: Duplex): void {
    const budget = new UnauthenticatedBudget(this.capsConfig.unauthenticatedMaxBytes);
    const count = (chunk: Buffer) => {
      if (connection.principal !== undefined) return socket.off('data', count);
      if (budget.admits(chunk)) return;
      socket.off('data', count);
      connection.pauseReading();
      const reason = `Over ${budget.limit} bytes sent before authenticating (WS_UNAUTHENTICATED_MAX_BYTES)`;
      connection.close(CLOSE_MESSAGE_TOO_BIG, reason, this.capsConfig.authTimeoutMs);
    };
    socket.on('data', count);
  }

  private accept(route: WsRoute, connection: GatewayConnection): void {
    const { socket } = connection;
    this.registry.add(connection);
    // Errors on a client socket are its protocol faults (an oversized or invalid frame); `ws`
    // closes the socket with the right code itself, so they are worth one line, not a stack.
    socket.on('error', (error: Error & { code?: string }) =>
      this.logger.warn(`Closed a client for a protocol error: ${error.message} (${error.code ?? 'no code'})`),
    );
    // Once the gateway has begun closing a socket (a client that stopped reading, a cap, a
    // timeout), what it still sends is dropped: no call it asks for is started, nothing is answered.
    const binary = route.gateway.onBinary?.bind(route.gateway);
    const dispatch = (raw: Buffer, isBinary: boolean) => {
      if (!connection.isOpen) return;
      if (isBinary && binary) binary(connection, raw);
      else void route.dispatcher.dispatch(connection, raw);
    };
    // A client's `traceparent` on the upgrade is the parent of what its frames cause (turns, tool calls).
    const traceParent = traceContextOf(connection.request.headers);
    socket.on('message', traceParent ? (raw: Buffer, isBinary: boolean) => runInTraceContext(traceParent, () => dispatch(raw, isBinary)) : dispatch);
    connection.onClose(() => {
      this.registry.delete(connection);
      try {
        route.gateway.onClose?.(connection);
      } catch (error) {
        this.logger.error(`${connection.protocol} connection close failed: ${(error as Error)?.stack ?? error}`);
      }
    });
    try {
      route.dispatcher.open(connection);
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
