import 'reflect-metadata';
import type { FrameSchema } from '../validation/frame-schema';

export interface FrameHandlerOptions {
  /** Checked before the handler runs (compiled once); a frame that fails it is the protocol's invalid-message answer. */
  schema?: FrameSchema;
  /** Runs on a connection not yet authenticated (the protocol's auth frame); every other frame is refused until then. */
  beforeAuth?: boolean;
  /** Serves only connections that agreed on this subprotocol (plain MCP's `mcp`); without, only those that agreed on none. */
  subprotocol?: string;
  /** Runs after the connection's earlier `serial` frames, one at a time (the route's `serial` option bounds the queue). */
  serial?: boolean;
}

export interface FrameHandlerMetadata extends FrameHandlerOptions {
  /** The frame `type`, or a `FrameEvent` for frames that have none. */
  type: string;
  method: string | symbol;
}

const FRAME_HANDLERS = Symbol('frame-handlers');

/**
 * Marks a gateway method as the handler of frames of `type`: it gets the parsed, validated
 * frame and the connection, and returns its answer (a frame, a promise of one, or nothing).
 * `type` may be a `FrameEvent` for frames that cannot be routed by a `type` of their own.
 */
export function OnFrame(type: string, options: FrameHandlerOptions = {}): MethodDecorator {
  return (target, method) => {
    const handlers: FrameHandlerMetadata[] = Reflect.getOwnMetadata(FRAME_HANDLERS, target) ?? [...(Reflect.getMetadata(FRAME_HANDLERS, target) ?? [])];
    handlers.push({ ...options, type, method });
    Reflect.defineMetadata(FRAME_HANDLERS, handlers, target);
  };
}

/** The `@OnFrame` handlers of a gateway class, its ancestors' included. */
export function frameHandlersOf(gateway: object): FrameHandlerMetadata[] {
  return Reflect.getMetadata(FRAME_HANDLERS, gateway) ?? [];
}
