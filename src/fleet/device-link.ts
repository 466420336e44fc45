import type { DeviceTool } from './device-entry';

/**
 * A device's socket on this instance, as the fleet drives it: the LLM gateway makes one for each
 * connection that named itself, and speaks its protocol (`tool_callback`, pushed frames) for the
 * fleet, which knows nothing of frames.
 */
export interface DeviceLink {
  readonly deviceId: string;
  readonly principal?: string;
  readonly connectionId: string;
  /** When it connected, ISO 8601. */
  readonly since: string;
  /** The tools it offers agents (`visibility` `agents` or `both`). */
  agentTools(): DeviceTool[];
  /** Runs one of its {@link agentTools} on the device until `signal` stops the wait; rejects once the socket closes. */
  callTool(toolName: string, args: Record<string, unknown>, signal: AbortSignal): Promise<unknown>;
  /** Queues a pushed sentence (behind the turn in flight, or after cancelling it); throws `DEVICE_BUSY` when the queue is full. */
  say(turnId: string, text: string, options: { interrupt?: boolean; reminderId?: string }): void;
  /** Queues a turn as if the user had said `text`; throws `DEVICE_BUSY` when the queue is full. */
  startTurn(turnId: string, text: string): void;
  /** Closes the socket: a newer connection of the same device took its place. */
  replaced(): void;
}
