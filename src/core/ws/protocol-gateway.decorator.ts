import { NestInterceptor, Type } from '@nestjs/common';
import { INTERCEPTORS_METADATA } from '@nestjs/common/constants';
import { WebSocketGateway } from '@nestjs/websockets';
import { GATEWAY_OPTIONS } from '@nestjs/websockets/constants';
import type { GatewayConfig } from '../../config/gateway-config';
import type { FrameConnection, GatewayConnection } from './connection';
import { HeartbeatInterceptor } from './heartbeat.interceptor';
import type { UpgradeGuard } from './upgrade-guard';

/** How a route treats a frame over `CLOUD_MAX_MESSAGE_SIZE`. */
export type OversizedFrameHandling =
  /** Close the connection with 1009 (the LLM gateway spec's rule). */
  | 'close'
  /** Answer through the protocol's error mapping and keep the connection; frames over
   * {@link OVERSIZED_FRAME_CEILING} times the limit still close with 1009, since they would
   * have to be buffered whole to be answered. */
  | 'answer';

/** Multiple of the message limit up to which an `answer` route still receives a frame. */
export const OVERSIZED_FRAME_CEILING = 16;

/**
 * A protocol's own cap on its connections: the setting it reads, and what a client past it gets
 * (an HTTP status at the upgrade, or with `closeCode` a socket accepted and closed at once, as
 * the LLM gateway spec asks).
 */
export interface ConnectionCapOptions {
  /** The setting, named in the refusal. */
  setting: string;
  limit(config: GatewayConfig): number;
  status: 429 | 503;
  closeCode?: number;
  /** Names the connections in the refusal: "Too many <label> connections". */
  label?: string;
}

/** What routes cap when they declare nothing: `WS_MAX_CONNECTIONS_PER_PROTOCOL`, 503. */
export const PER_PROTOCOL_CAP: ConnectionCapOptions = {
  setting: 'WS_MAX_CONNECTIONS_PER_PROTOCOL',
  limit: (config) => config.connections.perProtocol,
  status: 503,
};

/** How a protocol's client that authenticates by a frame after connecting is held to a deadline. */
export interface AuthByMessageOptions {
  /** The setting of the deadline, named when it passes. */
  setting: string;
  timeoutMs(config: GatewayConfig): number;
}

/** The UTCP-style deadline, `WS_AUTH_TIMEOUT`. */
export const WS_AUTH_DEADLINE: AuthByMessageOptions = { setting: 'WS_AUTH_TIMEOUT', timeoutMs: (config) => config.connections.authTimeoutMs };

/**
 * Frames whose handlers are marked `serial` run one at a time in arrival order, in the
 * connection's queue: at most `maxWaiting` wait behind the running one, and then either one
 * more is refused in the protocol's words (`refuse`) or the connection stops being read until
 * half of them are served (`pause`: for frames without ids, whose answers are paired with
 * requests by order alone, so a refusal out of turn would be taken for an earlier answer).
 */
export interface SerialOptions {
  maxWaiting: number;
  whenFull: 'refuse' | 'pause';
}

export interface ProtocolGatewayOptions {
  /** The protocol's name (`llm`, `mcp`, `litemcp`, `utcp`): connections are counted and limited by it. */
  protocol: string;
  /** Route pattern (path-to-regexp syntax): `/utcp`, `/litemcp/:tool`. */
  path: string;
  /** More patterns served by the same gateway (`/llm` beside `/`). */
  aliases?: string[];
  /**
   * Checked in order before the upgrade completes; refusals are HTTP statuses. The shared bearer
   * check comes first unless one of them authenticates (a `BearerAuthGuard` or one built on it)
   * or the route is {@link public}.
   */
  upgradeGuards?: Type<UpgradeGuard>[];
  /** Opens the route to clients with no token; without it, every upgrade is authenticated. */
  public?: boolean;
  oversizedFrames?: OversizedFrameHandling;
  /**
   * Keeps a connection's peer alive or drops it: an interceptor of the connection's opening that
   * starts its keep-alive. {@link HeartbeatInterceptor} by default (WebSocket pings at
   * `CLOUD_PING_INTERVAL`, closed after `CLOUD_PING_TIMEOUT` of silence); a protocol with a ping
   * of its own names its own interceptor.
   */
  heartbeat?: Type<NestInterceptor>;
  /** The protocol's cap on its open connections; {@link PER_PROTOCOL_CAP} when omitted. */
  connectionCap?: ConnectionCapOptions;
  /**
   * Clients may authenticate with a frame after connecting: a socket without a principal after
   * the upgrade is closed if it has not within the deadline (the gateway's `onAuthTimeout` says
   * so in the protocol's words; a 1008 close otherwise).
   */
  authByMessage?: AuthByMessageOptions;
  /** The queue `serial` handlers run in; {@link SerialOptions}. */
  serial?: SerialOptions;
  /** Passed to `ws`: choose a subprotocol from those the client offers. */
  handleProtocols?: (protocols: Set<string>, request: unknown) => string | false;
}

/** What the adapter reads off a gateway's decorator. */
export interface ProtocolRouteOptions extends ProtocolGatewayOptions {
  gateway: Type<AnyProtocolGateway>;
}

/**
 * A protocol's gateway: the thin class that the adapter hands each connection and each frame
 * to. Frames reach its `@OnFrame` methods; what is left is the connection's life and the
 * protocol's words for a failure.
 */
export interface ProtocolGatewayHooks<State = unknown> {
  /**
   * A socket was accepted (its principal known if the upgrade settled it): set `state`, greet the
   * client. Runs through the interceptors declared on it, the route's heartbeat first.
   */
  onOpen?(connection: GatewayConnection<State>): void;
  /**
   * A binary message, for a protocol whose binary messages are not frames of its handlers
   * (xiaozhi's audio); without this hook, binary messages are dispatched as frames like text.
   */
  onBinary?(connection: GatewayConnection<State>, data: Buffer): void;
  /** The socket closed: let go of what the connection held. */
  onClose?(connection: GatewayConnection<State>): void;
  /** The auth frame did not come within the route's deadline; the protocol says so and closes. */
  onAuthTimeout?(connection: GatewayConnection<State>, timeoutMs: number): void;
  /**
   * Any failure of a frame (refused by the dispatcher, invalid, or thrown by a handler) as the
   * protocol's answer: a frame to send, or `undefined` for none.
   */
  onFrameError(error: unknown, frame: unknown, connection: FrameConnection<State>): unknown;
}

/** Any protocol's gateway, whatever its connections' state. */
export type AnyProtocolGateway = ProtocolGatewayHooks<never>;

/**
 * `@WebSocketGateway()` for the gateway's shared HTTP server, with what the protocols need at
 * the upgrade and for the life of a connection, decided here once per route: a protocol name,
 * path patterns, upgrade guards, the oversized-frame rule, the connection cap, authentication by
 * message and its deadline, the serial queue, and the keep-alive. The keep-alive is a Nest
 * interceptor on the gateway's `onOpen` (the metadata `@UseInterceptors` writes), so every route
 * has one unless it names another.
 * Read by `GatewayWsAdapter`, which routes the class's frames itself (see `FrameDispatcher`).
 */
export function ProtocolGateway(options: ProtocolGatewayOptions): ClassDecorator {
  return (target) => {
    const prototype = target.prototype as { onOpen?: (connection: GatewayConnection) => void };
    // A gateway with nothing of its own to do at the opening still keeps its connections alive.
    if (typeof prototype.onOpen !== 'function') prototype.onOpen = () => undefined;
    // What `@UseInterceptors` would write, the heartbeat put first: it wraps the rest of the opening.
    const declared: Type<NestInterceptor>[] = Reflect.getMetadata(INTERCEPTORS_METADATA, prototype.onOpen) ?? [];
    Reflect.defineMetadata(INTERCEPTORS_METADATA, [options.heartbeat ?? HeartbeatInterceptor, ...declared], prototype.onOpen);
    const route: ProtocolRouteOptions = { ...options, gateway: target as unknown as Type<AnyProtocolGateway> };
    WebSocketGateway(0, route)(target);
  };
}

/** The route `@ProtocolGateway` put on `type`; `undefined` for anything but a protocol's gateway. */
export function protocolRouteOf(type: unknown): ProtocolRouteOptions | undefined {
  if (typeof type !== 'function') return undefined;
  const options = Reflect.getMetadata(GATEWAY_OPTIONS, type) as Partial<ProtocolRouteOptions> | undefined;
  return options?.gateway === type && typeof options.protocol === 'string' ? (options as ProtocolRouteOptions) : undefined;
}
