import { randomBytes } from 'crypto';

/** A reminder waiting to be spoken on a device. */
export interface Reminder {
  /** `rem_` and 16 hex digits; the BullMQ job id too. */
  id: string;
  deviceId: string;
  /** Who set it (the principal of its token; `undefined` with auth off): the push is made in their name. */
  principal?: string;
  /** What the device says when it falls due. */
  text: string;
  /** When it falls due, in ms since the epoch. */
  dueAt: number;
  createdAt: number;
  /**
   * If its device is offline when it falls due: `false` gives it up at once (its receipt says
   * `expired`); otherwise (absent too) it is spoken at the device's next connection within the
   * reminders' hold (`FLEET_REMINDER_HOLD_S`), else it expires.
   */
  deliverWhenOnline?: boolean;
}

/** The settings of reminders (see the module's factory for where they come from). */
export interface RemindersOptions {
  /** Pending reminders one device may have, whoever set them. */
  maxPerDevice: number;
  /** Pending reminders one principal may have set, over all devices (the anonymous principal, auth off, included). */
  maxPerPrincipal: number;
  /**
   * How long a due reminder waits for its device when the device is offline (`DevicePush` `holdS`);
   * a reminder is spoken at most this long after it fell due, or dropped. 0: an offline device misses it.
   */
  holdS: number;
  /** How far ahead a reminder may be set, in seconds. */
  maxAheadS: number;
}

export const DEFAULT_REMINDERS_OPTIONS: Readonly<RemindersOptions> = Object.freeze({
  maxPerDevice: 50,
  maxPerPrincipal: 500,
  holdS: 3600,
  maxAheadS: 366 * 24 * 3600,
});

/** DI token of the {@link RemindersOptions} in use. */
export const REMINDERS_OPTIONS = Symbol('REMINDERS_OPTIONS');

/** DI token of the {@link ReminderScheduler} in use. */
export const REMINDER_SCHEDULER = Symbol('REMINDER_SCHEDULER');

/** Which bound a new reminder would break. */
export type ReminderLimit = 'device' | 'principal';

/** Thrown by {@link ReminderScheduler.schedule} when the device or the principal has as many pending reminders as allowed. */
export class ReminderLimitError extends Error {
  constructor(
    readonly limit: ReminderLimit,
    readonly max: number,
  ) {
    super(limit === 'device' ? `The device has ${max} pending reminders, the most allowed` : `${max} pending reminders set already, the most allowed`);
    this.name = 'ReminderLimitError';
  }
}

/**
 * Where reminders wait, and what speaks them when they fall due. In memory (timers; lost on a
 * restart) without `REDIS_URL`; in Redis with BullMQ otherwise (shared by every instance, kept
 * across restarts and the loss of a replica, each spoken once). The bounds are checked and the
 * reminder stored in one atomic step, so concurrent calls cannot overshoot them.
 */
export interface ReminderScheduler {
  /** Stores and schedules `reminder`; throws {@link ReminderLimitError} when a bound is reached. */
  schedule(reminder: Reminder): Promise<void>;
  /** The pending reminder `id`, if there is one. */
  get(id: string): Promise<Reminder | undefined>;
  /** The pending reminders of `deviceId`, earliest first (ties by id). */
  listForDevice(deviceId: string): Promise<Reminder[]>;
  /** Cancels the pending reminder `id`; what it was, or `undefined` when none was pending (unknown, cancelled, spoken). */
  cancel(id: string): Promise<Reminder | undefined>;
}

/** Speaks a reminder that fell due; never rejects (what went wrong is logged). */
export type DeliverReminder = (reminder: Reminder, signal: AbortSignal) => Promise<void>;

/** A new reminder id: short enough for a model to repeat, random enough never to collide in practice. */
export function newReminderId(): string {
  return `rem_${randomBytes(8).toString('hex')}`;
}

/** Whether `id` has the shape of a reminder id (anything else is unknown without asking the store). */
export function isReminderId(id: string): boolean {
  return /^rem_[0-9a-f]{16}$/.test(id);
}
