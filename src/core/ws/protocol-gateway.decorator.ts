import type { Type } from '@nestjs/common';
import { WebSocketGateway } from '@nestjs/websockets';
import type { FrameConnection, GatewayConnection } from './connection';
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

export interface ProtocolGatewayOptions {
  /** The protocol's name (`llm`, `mcp`, `litemcp`, `utcp`): connections are counted and limited by it. */
  protocol: string;
  /** Route pattern (path-to-regexp syntax): `/utcp`, `/litemcp/:tool`. */
  path: string;
  /** More patterns served by the same gateway (`/llm` beside `/`). */
  aliases?: string[];
  /** Checked in order before the upgrade completes; refusals are HTTP statuses. */
  upgradeGuards?: Type<UpgradeGuard>[];
  oversizedFrames?: OversizedFrameHandling;
  /**
   * Clients may authenticate with a frame after connecting (UTCP): a socket without a principal
   * is closed if it has not within `WS_AUTH_TIMEOUT`. A gateway with a deadline of its own (the
   * MCP envelope's) leaves this off.
   */
  authByMessage?: boolean;
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
  /** A socket was accepted (its principal known if the upgrade settled it): set `state`, greet the client. */
  onOpen?(connection: GatewayConnection<State>): void;
  /** The socket closed: let go of what the connection held. */
  onClose?(connection: GatewayConnection<State>): void;
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
 * the upgrade: a protocol name, path patterns, upgrade guards and the oversized-frame rule. Read
 * by `GatewayWsAdapter`, which routes the class's frames itself (see `FrameDispatcher`).
 */
export function ProtocolGateway(options: ProtocolGatewayOptions): ClassDecorator {
  return (target) => {
    const route: ProtocolRouteOptions = { ...options, gateway: target as unknown as Type<AnyProtocolGateway> };
    WebSocketGateway(0, route)(target);
  };
}
