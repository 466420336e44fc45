import { Inject, Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import type { Subscription } from 'rxjs';
import { GATEWAY_CONFIG, GatewayConfig } from '../../config/gateway-config';
import { zonedTime } from '../../core/time/clock';
import type { ToolCallContext } from '../../core/tools/tool-definition';
import { ToolError } from '../../core/tools/tool-error';
import { BuiltinTool } from '../../core/tools/tool.decorator';
import { DEVICE_PUSH, DevicePush } from '../device-push';
import { LATE_GRACE_S } from './reminder-delivery';
import { reminderPushId } from '../receipts/push-state';
import {
  isReminderId,
  newReminderId,
  Reminder,
  REMINDER_SCHEDULER,
  ReminderLimitError,
  ReminderScheduler,
  REMINDERS_OPTIONS,
  RemindersOptions,
} from './reminder';

/** Longest reminder text, in characters. */
export const MAX_REMINDER_TEXT = 500;

/** A time this little in the past is taken as "now" (the model's clock reading is a few seconds old). */
export const PAST_TOLERANCE_MS = 5000;

/** An ISO 8601 date-time with its offset: date, `T` (or a space), hours and minutes, optional seconds and fraction, `Z` or `±hh:mm`. */
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(?:([Zz])|([+-])(\d{2}):?(\d{2}))$/;

const DEVICE_ID_SCHEMA = {
  type: 'string',
  minLength: 1,
  maxLength: 200,
  description:
    "The device that will speak the reminder. Omit it on a device's own voice connection (the reminder is for that device); agents and other clients must give it.",
} as const;

/** A reminder as the tools return it. */
export interface ReminderView {
  id: string;
  device_id: string;
  /** When it falls due, in `DEFAULT_TIMEZONE` (ISO 8601 with offset). */
  due_at: string;
  text: string;
  /** The id of its push's delivery receipt (`GET /pushes/<push_id>`), there once it falls due. */
  push_id: string;
  /** Whether an offline device gets it at its next connection (within the reminders' hold), rather than missing it. */
  deliver_when_online: boolean;
}

const REMINDER_VIEW_SCHEMA = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    device_id: { type: 'string' },
    due_at: { type: 'string' },
    text: { type: 'string' },
    push_id: { type: 'string' },
    deliver_when_online: { type: 'boolean' },
  },
  required: ['id', 'device_id', 'due_at', 'text', 'push_id', 'deliver_when_online'],
} as const;

interface SetReminderArguments {
  at?: string;
  in_s?: number;
  text: string;
  device_id?: string;
  deliver_when_online?: boolean;
}

/**
 * Reminders a device speaks when they fall due ("remind me at 7 to call mum"), for the device's
 * own model and for agents (MCP, UTCP, LiteMCP, HTTP). A device's model sets them for its own
 * device; an agent names a device it may reach (its own, or one its token is granted). Who may
 * reach a device may list and cancel its reminders, whoever set them; the push is made in the
 * name of who set it.
 */
@Injectable()
export class ReminderTools implements OnModuleDestroy {
  private readonly logger = new Logger('Reminders');
  private readonly releases: Subscription;

  constructor(
    @Inject(DEVICE_PUSH) private readonly push: DevicePush,
    @Inject(REMINDER_SCHEDULER) private readonly scheduler: ReminderScheduler,
    @Inject(REMINDERS_OPTIONS) private readonly options: RemindersOptions,
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
  ) {
    // A released id may go to another principal: its reminders must not be spoken to them.
    this.releases = push.released.subscribe(({ deviceId }) => void this.cancelAllOf(deviceId));
  }

  onModuleDestroy(): void {
    this.releases.unsubscribe();
  }

  @BuiltinTool({
    name: 'set_reminder',
    description:
      'Sets a reminder: when it falls due, the device says the text aloud. Give exactly one of `at` (a date-time with its UTC offset) or `in_s` (seconds from now). ' +
      "On a device's own voice connection omit device_id; agents must give it. Returns the reminder's id (to cancel it) and when it falls due.",
    inputSchema: {
      type: 'object',
      properties: {
        at: {
          type: 'string',
          minLength: 1,
          maxLength: 64,
          description: 'When the reminder falls due: an ISO 8601 date-time with its UTC offset, e.g. 2026-11-21T19:00:00+08:00 (or Z for UTC). Not with in_s.',
          examples: ['2026-11-21T19:00:00+08:00'],
        },
        in_s: {
          type: 'number',
          exclusiveMinimum: 0,
          description: 'When the reminder falls due, in seconds from now (600 for "in 10 minutes"). Not with at.',
          examples: [600],
        },
        text: {
          type: 'string',
          minLength: 1,
          maxLength: MAX_REMINDER_TEXT,
          description: `What the device says when the reminder falls due, worded to be spoken to the user (at most ${MAX_REMINDER_TEXT} characters)`,
          examples: ["It's seven o'clock: time to call mum."],
        },
        device_id: DEVICE_ID_SCHEMA,
        deliver_when_online: {
          type: 'boolean',
          default: true,
          description:
            "If the device is offline when the reminder falls due: true, say it when the device connects again (within the gateway's reminder hold); false, give it up. Either way its receipt (push_id) ends with a state.",
        },
      },
      required: ['text'],
      additionalProperties: false,
    },
    outputSchema: REMINDER_VIEW_SCHEMA,
    examples: [
      { description: 'Remind me in 10 minutes to check the oven', arguments: { in_s: 600, text: 'Ten minutes are up: check the oven.' } },
      { description: 'Remind me at 7 pm to call mum', arguments: { at: '2026-11-21T19:00:00+08:00', text: "It's seven o'clock: time to call mum." } },
    ],
    tags: ['time', 'reminder', 'device'],
  })
  async setReminder({ at, in_s, text, device_id, deliver_when_online }: SetReminderArguments, context: ToolCallContext): Promise<ReminderView> {
    const deviceId = await this.deviceOf(device_id, context);
    const spoken = text.trim();
    if (spoken.length === 0) throw new ToolError('text must say something');
    const now = Date.now();
    const dueAt = this.dueTime(at, in_s, now);
    const reminder: Reminder = {
      id: newReminderId(),
      deviceId,
      principal: context.principal,
      text: spoken,
      dueAt,
      createdAt: now,
      ...(deliver_when_online === false && { deliverWhenOnline: false }),
    };
    try {
      await this.scheduler.schedule(reminder);
      // The device's id stays its owner's until the reminder is spoken or given up.
      await this.push.keepOwned(deviceId, dueAt + Math.max(this.options.holdS, LATE_GRACE_S) * 1000);
    } catch (error) {
      if (!(error instanceof ReminderLimitError)) throw error;
      throw new ToolError(
        error.limit === 'device'
          ? `Device "${deviceId}" has ${error.max} pending reminders already, the most it may have: cancel one first`
          : `You have ${error.max} pending reminders already, the most allowed: cancel one first`,
        { limit: error.limit, max: error.max },
      );
    }
    return this.view(reminder);
  }

  @BuiltinTool({
    name: 'list_reminders',
    description:
      "Lists a device's pending reminders, earliest first: id, when each falls due, and what it will say. On a device's own voice connection omit device_id; agents must give it.",
    inputSchema: {
      type: 'object',
      properties: { device_id: DEVICE_ID_SCHEMA },
      additionalProperties: false,
    },
    outputSchema: {
      type: 'object',
      properties: { device_id: { type: 'string' }, reminders: { type: 'array', items: REMINDER_VIEW_SCHEMA } },
      required: ['device_id', 'reminders'],
    },
    examples: [{ description: 'What reminders do I have?', arguments: {} }],
    tags: ['time', 'reminder', 'device'],
  })
  async listReminders({ device_id }: { device_id?: string }, context: ToolCallContext): Promise<{ device_id: string; reminders: ReminderView[] }> {
    const deviceId = await this.deviceOf(device_id, context);
    const reminders = await this.scheduler.listForDevice(deviceId);
    return { device_id: deviceId, reminders: reminders.map((reminder) => this.view(reminder)) };
  }

  @BuiltinTool({
    name: 'cancel_reminder',
    presentation: { title: 'Cancel a reminder', annotations: { destructiveHint: true, idempotentHint: true, openWorldHint: false } },
    description: 'Cancels a pending reminder by its id (as set_reminder or list_reminders gave it), so it is not spoken.',
    inputSchema: {
      type: 'object',
      properties: { id: { type: 'string', minLength: 1, maxLength: 64, description: 'The id of the reminder, e.g. rem_3f9a0c1d2e4b5a69' } },
      required: ['id'],
      additionalProperties: false,
    },
    outputSchema: {
      type: 'object',
      properties: { ...REMINDER_VIEW_SCHEMA.properties, cancelled: { type: 'boolean' } },
      required: [...REMINDER_VIEW_SCHEMA.required, 'cancelled'],
    },
    examples: [{ description: 'Cancel the reminder to call mum', arguments: { id: 'rem_3f9a0c1d2e4b5a69' } }],
    tags: ['time', 'reminder', 'device'],
  })
  async cancelReminder({ id }: { id: string }, context: ToolCallContext): Promise<ReminderView & { cancelled: true }> {
    const unknown = () => new ToolError(`No pending reminder "${id}" (it may have been spoken or cancelled already; list_reminders shows the pending ones)`);
    if (!isReminderId(id)) throw unknown();
    const pending = await this.scheduler.get(id);
    // One the caller may not reach is reported like an unknown one.
    if (!pending || !(await this.mayTouch(pending, context))) throw unknown();
    const cancelled = await this.scheduler.cancel(id);
    if (!cancelled) throw unknown();
    return { ...this.view(cancelled), cancelled: true };
  }

  /** The device a call is about: its connection's own when `deviceId` is omitted, else one the caller may reach. */
  private async deviceOf(deviceId: string | undefined, { principal, connectionId }: ToolCallContext): Promise<string> {
    const own = connectionId === undefined ? undefined : this.push.deviceOfConnection(connectionId);
    if (deviceId === undefined) {
      if (own === undefined) throw new ToolError('This connection named no device (connect with a Device-Id header), so give device_id');
      return own;
    }
    if (deviceId !== own && !(await this.push.mayReach({ principal }, deviceId))) throw new ToolError(`Unknown device "${deviceId}"`);
    return deviceId;
  }

  /** Cancels every pending reminder of a device whose id was released. */
  private async cancelAllOf(deviceId: string): Promise<void> {
    try {
      const pending = await this.scheduler.listForDevice(deviceId);
      await Promise.all(pending.map((reminder) => this.scheduler.cancel(reminder.id)));
      if (pending.length > 0) this.logger.log(`Device id ${deviceId} released: ${pending.length} pending reminder(s) cancelled`);
    } catch (error) {
      this.logger.warn(`Device id ${deviceId} released, but its reminders could not be cancelled: ${(error as Error).message}`);
    }
  }

  /** Whether the caller may see and cancel `reminder`: they may reach its device (a connection of that device may). */
  private async mayTouch(reminder: Reminder, { principal, connectionId }: ToolCallContext): Promise<boolean> {
    if (connectionId !== undefined && this.push.deviceOfConnection(connectionId) === reminder.deviceId) return true;
    return this.push.mayReach({ principal }, reminder.deviceId);
  }

  /** When a reminder set with `at` or `in_s` falls due, checked against the bounds; a clear ToolError otherwise. */
  private dueTime(at: string | undefined, inS: number | undefined, now: number): number {
    const nowText = `it is now ${this.iso(now)}`;
    if (at !== undefined && inS !== undefined) throw new ToolError('Give either at or in_s, not both');
    let dueAt: number;
    if (inS !== undefined) {
      dueAt = now + Math.round(inS * 1000);
    } else if (at !== undefined) {
      const parsed = parseDateTime(at);
      if (parsed === 'no-offset') {
        throw new ToolError(`at must carry its UTC offset, e.g. ${this.iso(now + 3600_000)} (${nowText})`);
      }
      if (parsed === undefined) {
        throw new ToolError(`at is not an ISO 8601 date-time with offset, e.g. ${this.iso(now + 3600_000)} (${nowText})`);
      }
      dueAt = parsed;
    } else {
      throw new ToolError('Say when: give at (a date-time with its UTC offset) or in_s (seconds from now)');
    }
    if (dueAt < now - PAST_TOLERANCE_MS) throw new ToolError(`${this.iso(dueAt)} is in the past (${nowText})`);
    const maxAheadS = this.options.maxAheadS;
    if (dueAt > now + maxAheadS * 1000) {
      throw new ToolError(`A reminder may be set at most ${describeSpan(maxAheadS)} ahead, until ${this.iso(now + maxAheadS * 1000)} (${nowText})`);
    }
    return Math.max(dueAt, now);
  }

  private view({ id, deviceId, dueAt, text, deliverWhenOnline }: Reminder): ReminderView {
    return { id, device_id: deviceId, due_at: this.iso(dueAt), text, push_id: reminderPushId(id), deliver_when_online: deliverWhenOnline !== false };
  }

  private iso(moment: number): string {
    return zonedTime(new Date(moment), this.config.tools.defaultTimezone).iso;
  }
}

/**
 * The moment `text` names (ms since the epoch); `'no-offset'` when it is a date-time without its
 * offset, `undefined` when it is not one (a 30th of February included).
 */
export function parseDateTime(text: string): number | 'no-offset' | undefined {
  const match = DATE_TIME.exec(text.trim());
  if (!match) return /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/.test(text.trim()) ? 'no-offset' : undefined;
  const [, year, month, day, hour, minute, second = '00', fraction = '', zulu, sign, offsetHours, offsetMinutes] = match;
  const offsetMs = zulu ? 0 : (sign === '-' ? -1 : 1) * (Number(offsetHours) * 60 + Number(offsetMinutes)) * 60_000;
  if (!zulu && (Number(offsetHours) > 23 || Number(offsetMinutes) > 59)) return undefined;
  const wall = Date.UTC(
    Number(year),
    Number(month) - 1,
    Number(day),
    Number(hour),
    Number(minute),
    Number(second),
    Number(fraction.padEnd(3, '0').slice(0, 3)),
  );
  // Date.UTC rolls a 30th of February over into March: a date that does not read back is not one.
  const check = new Date(wall);
  if (
    check.getUTCFullYear() !== Number(year) ||
    check.getUTCMonth() !== Number(month) - 1 ||
    check.getUTCDate() !== Number(day) ||
    check.getUTCHours() !== Number(hour) ||
    check.getUTCMinutes() !== Number(minute) ||
    check.getUTCSeconds() !== Number(second)
  ) {
    return undefined;
  }
  return wall - offsetMs;
}

/** A span of seconds in words, as the refusals say it: "366 days", "2 hours". */
function describeSpan(seconds: number): string {
  const units: [number, string][] = [
    [86_400, 'day'],
    [3600, 'hour'],
    [60, 'minute'],
  ];
  for (const [size, name] of units) {
    if (seconds >= size && seconds % size === 0) return `${seconds / size} ${name}${seconds === size ? '' : 's'}`;
  }
  return `${seconds} seconds`;
}
