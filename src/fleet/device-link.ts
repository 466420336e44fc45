import type { ArgumentsValidator } from '../core/tools/json-schema';
import type { DeviceTool } from './device-entry';

/**
 * A push as a device's queue took it. `started` settles when it reached the device: a sentence
 * written to its socket, a turn begun; it rejects with `DEVICE_OFFLINE` when the connection ended
 * (or began to close) first, so nobody is told "spoken" for what was never sent.
 */
export interface QueuedPush {
  /** Whether it waits behind the device's turn in flight (or other pushes) rather than starting at once. */
  readonly waiting: boolean;
  readonly started: Promise<void>;
  /**
   * How it ended on the device, once it did (never rejects): `spoken` when the device finished
   * it as its protocol says an answer ends, `interrupted` with why otherwise (cut, failed, or
   * the connection ended before or while it was said).
   */
  readonly finished: Promise<PushEnd>;
}

/** How a push ended on the device. */
export type PushEnd = { state: 'spoken' } | { state: 'interrupted'; reason: string };

/** Why a push did not end `spoken`: the words its receipt records. */
export const PUSH_CUT = {
  /** The device's `abort` (or its wake word). */
  abort: 'abort',
  /** The user spoke over it. */
  bargeIn: 'barge_in',
  /** A newer push with `interrupt` cut it. */
  newerPush: 'interrupted_by_push',
  /** The connection ended before it finished. */
  disconnected: 'disconnected',
  /** Its speech could not be synthesized, or its turn failed. */
  failed: 'failed',
  /** Its turn was cancelled, or ended with nothing to say. */
  cancelled: 'cancelled',
} as const;

/**
 * A device's connection on this instance, as the fleet drives it, whatever protocol the device
 * speaks: the protocol makes one for each connection that named a device, hands it to the fleet
 * (`LocalDevices.attach`, and `detach` when it closes), and speaks its own frames for it. Push,
 * device tools and reminders only ever see this interface.
 */
export interface DeviceLink {
  readonly deviceId: string;
  /** The protocol it speaks (`llm`, `xiaozhi`), as the directory lists it. */
  readonly protocol: string;
  /** The board and firmware it runs (`User-Agent` of its configuration request), when known. */
  readonly userAgent?: string;
  /** The principal that connected it. */
  readonly principal?: string;
  /** The principal that owns its id (the same, unless a token granted the id connected it). */
  readonly owner?: string;
  readonly connectionId: string;
  /** When it connected, ISO 8601. */
  readonly since: string;
  /** The tools it offers agents (`visibility` `agents` or `both`). */
  agentTools(): DeviceTool[];
  /** The compiled check of one of its {@link agentTools}' arguments, when the protocol compiled it already (for the device's own model): the fleet reuses it rather than compile the tool twice. */
  validatorOf?(toolName: string): ArgumentsValidator | undefined;
  /** Runs one of its {@link agentTools} on the device until `signal` stops the wait; rejects once the socket closes. */
  callTool(toolName: string, args: Record<string, unknown>, signal: AbortSignal): Promise<unknown>;
  /** Queues a pushed sentence (behind the turn in flight, or after cancelling it); throws `DEVICE_BUSY` when the queue is full. */
  say(turnId: string, text: string, options: { interrupt?: boolean; reminderId?: string }): QueuedPush;
  /** Queues a turn as if the user had said `text`; throws `DEVICE_BUSY` when the queue is full. */
  startTurn(turnId: string, text: string): QueuedPush;
  /** Resolves once its queue has room for one more push (at once when it has). */
  whenRoom(): Promise<void>;
  /** Closes the socket: a newer connection of the same device took its place. */
  replaced(): void;
}
