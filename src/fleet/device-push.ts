import type { Observable } from 'rxjs';
import type { GatewayError } from '../core/errors/gateway-error';

/**
 * What the rest of the gateway (reminders, the `device_say` tool, the devices HTTP routes) asks
 * of the fleet to make a device speak, wherever its socket is. The fleet routes the push to the
 * instance that holds the device (through Redis when `REDIS_URL` is set), or holds it for the
 * device's next connection when the caller asked for that.
 */
export interface SayRequest {
  /** What the device says; cleaned for speech on its way out. */
  text: string;
  /** Cancel the turn in flight first (as barge-in does); otherwise the push waits for it to end. */
  interrupt?: boolean;
  /**
   * When the device is offline: hold the push this many seconds and deliver it at its next
   * connection, in order (bounded by `FLEET_HOLD_MAX_S`). Absent or 0: refuse with DEVICE_OFFLINE.
   */
  holdS?: number;
  /** Set when a reminder fell due: its id rides on the pushed `llm_response` (`reminder_id`). */
  reminderId?: string;
  /**
   * The id of the push's receipt, when the caller chose it (a reminder's, the same through its
   * retries; one device only). A push with a `reminderId` is never marked `refused`: its
   * reminder decides whether to try again, or marks it `expired`.
   */
  pushId?: string;
}

/** What became of a push at once; what becomes of it later is its delivery receipt's (`GET /pushes/<push_id>`). */
export interface PushReceipt {
  /**
   * `spoken`: the device has it now (written to its socket, or the turn begun); `queued`: it waits
   * on the device's connection behind the turn in flight (if the device leaves first, it is held
   * when `holdS` asked for that, else dropped); `held`: it will get it when it connects again.
   * (Kept as it was for existing clients: the receipt's `state` says `spoken` only once the
   * device finished saying it.)
   */
  delivered: 'spoken' | 'queued' | 'held';
  /** The `turn_id` its frames carry: also the id of its delivery receipt. */
  turnId: string;
}

/** What became of a push to one of many devices: its receipt, or why it did not reach it (with the id of its `refused` receipt, when it has one). */
export type PushOutcome = { device: string; receipt: PushReceipt } | { device: string; error: GatewayError; pushId?: string };

/** A receipt as callers read it, over HTTP and from the fleet's tools: `{push_id, delivered, turn_id}`. */
export function receiptView({ delivered, turnId }: PushReceipt) {
  return { push_id: turnId, delivered, turn_id: turnId };
}

/** An outcome as callers read it: `{device, push_id, delivered, turn_id}` or `{device, push_id?, error: {code, message}}`. */
export function pushOutcomeView(outcome: PushOutcome) {
  return 'error' in outcome
    ? {
        device: outcome.device,
        ...(outcome.pushId !== undefined && { push_id: outcome.pushId }),
        error: { code: outcome.error.code, message: outcome.error.message },
      }
    : { device: outcome.device, ...receiptView(outcome.receipt) };
}

/** Who asks for a push: the device must be theirs, or granted to their token (`devices` globs). */
export interface FleetCaller {
  principal?: string;
}

export const DEVICE_PUSH = Symbol('DEVICE_PUSH');

/**
 * Pushes speech to a device. Rejects with a `GatewayError`: `DEVICE_OFFLINE` (not connected
 * anywhere, not held), `DEVICE_BUSY` (its queue of pushes is full, or as many pushes as it may
 * have are held for it), `RATE_LIMITED` (the caller has as many pushes held as a token may),
 * `FORBIDDEN` (the caller may not reach it: to the caller it looks offline, so `DEVICE_OFFLINE`
 * too), `INVALID_MESSAGE` (bad id, empty or oversized text, bad `holdS`).
 */
export interface DevicePush {
  say(deviceId: string, request: SayRequest, caller: FleetCaller): Promise<PushReceipt>;
  /** The device id a connection named at its upgrade (`Device-Id`), if it named one. */
  deviceOfConnection(connectionId: string): string | undefined;
  /** Whether `caller` may reach `deviceId`, online or not: a device its principal owns, or one its token is granted. */
  mayReach(caller: FleetCaller, deviceId: string): Promise<boolean>;
  /** Something is pending for the device until `untilMs` (a reminder): its id stays its owner's at least that long. */
  keepOwned(deviceId: string, untilMs: number): Promise<void>;
  /** A push the gateway gave up on before it was sent (a reminder that could not be spoken): its receipt (made if it had none) says `expired`, and why. Never rejects. */
  expire(push: GivenUpPush, caller: FleetCaller): Promise<void>;
  /** Device ids their owners gave up: whatever is pending for them is dropped. */
  readonly released: Observable<ReleasedDevice>;
}

/** A push given up before it was sent: its receipt's id, its device, and why. */
export interface GivenUpPush {
  deviceId: string;
  pushId: string;
  reminderId?: string;
  reason: string;
}

/** A device id given up by its owner. */
export interface ReleasedDevice {
  deviceId: string;
  owner: string;
}
