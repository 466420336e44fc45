import type { ToolCallObserver } from '../tools/tool-invoker';
import type { FrameObserver } from '../ws/frame-dispatcher';
import type { RefusalListener } from '../ws/refusal-reason';

/** DI token of the {@link CoreObserver}, when the app has one (the metrics module provides it). */
export const CORE_OBSERVER = Symbol('CORE_OBSERVER');

/**
 * What the shared core tells whoever watches it (the Prometheus metrics), at the few points
 * every protocol passes: every tool call's end, every frame's end on each route, every refused
 * upgrade or request. Core defines it and never imports who implements it, so nothing imports
 * core back in a cycle.
 */
export interface CoreObserver {
  readonly toolCallEnded: ToolCallObserver;
  frameObserver(protocol: string): FrameObserver;
  readonly refused: RefusalListener;
}
