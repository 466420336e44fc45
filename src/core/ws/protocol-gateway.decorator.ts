import type { Type } from '@nestjs/common';
import { WebSocketGateway } from '@nestjs/websockets';
import type { UpgradeGuard } from './upgrade-guard';

/** How a route treats a frame over `CLOUD_MAX_MESSAGE_SIZE`. */
export type OversizedFrameHandling =
  /** Close the connection with 1009 (the LLM gateway spec's rule). */
  | 'close'
  /** Answer through the gateway's `FrameEvent.TOO_LARGE` handler and keep the connection; frames
   * over {@link OVERSIZED_FRAME_CEILING} times the limit still close with 1009, since they
   * would have to be buffered whole to be answered. */
  | 'answer';

/** Multiple of the message limit up to which an `answer` route still receives a frame. */
export const OVERSIZED_FRAME_CEILING = 16;

export interface ProtocolGatewayOptions {
  /** Route pattern (path-to-regexp syntax): `/utcp`, `/litemcp/:tool`. */
  path: string;
  /** More patterns served by the same gateway (`/llm` beside `/`). */
  aliases?: string[];
  /** Checked in order before the upgrade completes; refusals are HTTP statuses. */
  upgradeGuards?: Type<UpgradeGuard>[];
  oversizedFrames?: OversizedFrameHandling;
  /** Passed to `ws`: choose a subprotocol from those the client offers. */
  handleProtocols?: (protocols: Set<string>, request: unknown) => string | false;
}

/**
 * `@WebSocketGateway()` for the gateway's shared HTTP server, with what the protocols need at
 * the upgrade: path patterns, upgrade guards and the oversized-frame rule. Read by
 * `GatewayWsAdapter`.
 */
export function ProtocolGateway(options: ProtocolGatewayOptions): ClassDecorator {
  return WebSocketGateway(0, options);
}
