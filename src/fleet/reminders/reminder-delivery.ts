import { Logger } from '@nestjs/common';
import { setTimeout as sleep } from 'timers/promises';
import { GatewayError } from '../../core/errors/gateway-error';
import type { DevicePush } from '../device-push';
import { reminderPushId } from '../receipts/push-state';
import type { Reminder } from './reminder';

/** A reminder late by this much is still spoken even when reminders are not held (`holdS` 0). */
export const LATE_GRACE_S = 60;

/** Waits between attempts of a push that failed for a reason that may pass (the device's queue full, a fleet hiccup). */
export const DEFAULT_RETRY_DELAYS_MS: readonly number[] = [1000, 5000, 15000];

/** Failures that another attempt cannot fix: the device is offline and not held for, the caller may no longer reach it, the push is refused. */
const FINAL_CODES: ReadonlySet<string> = new Set(['DEVICE_OFFLINE', 'FORBIDDEN', 'UNAUTHORIZED', 'INVALID_MESSAGE', 'NOT_FOUND']);

/**
 * Speaks due reminders through {@link DevicePush}, in the name of whoever set them. An offline
 * device gets the reminder when it connects again, within `holdS` of the due time (the time
 * the reminder was late already counts), after which it is dropped: a reminder is never spoken
 * more than `max(holdS, 60 s)` after it fell due. A reminder set with `deliverWhenOnline: false`
 * is not held. A push refused for a reason that may pass (`DEVICE_BUSY`, an unexpected error)
 * is tried again a few times, then dropped; every drop is logged, and its receipt (the same id,
 * {@link reminderPushId}, through every attempt) says `expired`, so none ends without a state.
 * Never rejects.
 */
export class ReminderDelivery {
  private readonly logger = new Logger('Reminders');

  constructor(
    private readonly push: DevicePush,
    private readonly holdS: number,
    private readonly retryDelaysMs: readonly number[] = DEFAULT_RETRY_DELAYS_MS,
    private readonly now: () => number = Date.now,
  ) {}

  readonly deliver = async (reminder: Reminder, signal: AbortSignal): Promise<void> => {
    const reminderHoldS = reminder.deliverWhenOnline === false ? 0 : this.holdS;
    for (let attempt = 0; ; attempt += 1) {
      const lateS = Math.max(0, this.now() - reminder.dueAt) / 1000;
      if (lateS > Math.max(reminderHoldS, LATE_GRACE_S)) {
        this.logger.warn(`Reminder ${reminder.id} for device ${reminder.deviceId} fell due ${Math.round(lateS)} s ago, past its hold: dropped`);
        return this.expire(reminder, 'late');
      }
      const holdS = reminderHoldS > 0 ? Math.max(1, Math.ceil(reminderHoldS - lateS)) : 0;
      try {
        const receipt = await this.push.say(
          reminder.deviceId,
          { text: reminder.text, reminderId: reminder.id, holdS, pushId: reminderPushId(reminder.id) },
          { principal: reminder.principal },
        );
        this.logger.log(`Reminder ${reminder.id} for device ${reminder.deviceId}: ${receipt.delivered}`);
        return;
      } catch (error) {
        const code = error instanceof GatewayError ? error.code : undefined;
        const why = code ? `${code}: ${(error as Error).message}` : String((error as Error)?.message ?? error);
        if ((code && FINAL_CODES.has(code)) || attempt >= this.retryDelaysMs.length || signal.aborted) {
          this.logger.warn(`Reminder ${reminder.id} for device ${reminder.deviceId} could not be spoken (${why}): dropped`);
          return this.expire(reminder, code ?? 'failed');
        }
        this.logger.warn(`Reminder ${reminder.id} for device ${reminder.deviceId} could not be spoken yet (${why}); trying again`);
        try {
          await sleep(this.retryDelaysMs[attempt], undefined, { signal });
        } catch {
          this.logger.warn(`Reminder ${reminder.id} for device ${reminder.deviceId} not spoken: shutting down`);
          return;
        }
      }
    }
  };

  private async expire(reminder: Reminder, reason: string): Promise<void> {
    await this.push
      .expire({ deviceId: reminder.deviceId, pushId: reminderPushId(reminder.id), reminderId: reminder.id, reason }, { principal: reminder.principal })
      .catch((error: Error) => this.logger.warn(`Reminder ${reminder.id}: its receipt was not marked expired: ${error.message}`));
  }
}
