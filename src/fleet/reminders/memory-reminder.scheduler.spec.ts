import { Logger } from '@nestjs/common';
import { MemoryReminderScheduler } from './memory-reminder.scheduler';
import type { Reminder } from './reminder';
import { newReminderId } from './reminder';

describe('MemoryReminderScheduler', () => {
  beforeAll(() => Logger.overrideLogger(false));

  const DAY = 86_400_000;
  let delivered: Reminder[];
  let scheduler: MemoryReminderScheduler;

  beforeEach(() => {
    jest.useFakeTimers({ now: new Date('2026-11-21T10:00:00Z') });
    delivered = [];
    scheduler = new MemoryReminderScheduler({ maxPerDevice: 50, maxPerPrincipal: 500 }, async (reminder) => {
      delivered.push(reminder);
    });
  });
  afterEach(() => jest.useRealTimers());

  const reminder = (inMs: number, text = 'Tea'): Reminder => ({
    id: newReminderId(),
    deviceId: 'kitchen',
    principal: 'alice',
    text,
    dueAt: Date.now() + inMs,
    createdAt: Date.now(),
  });

  it('speaks a reminder further ahead than one timer can wait, on time', async () => {
    const far = reminder(300 * DAY, 'far');
    await scheduler.schedule(far);
    await jest.advanceTimersByTimeAsync(300 * DAY - 1);
    expect(delivered).toEqual([]);
    await jest.advanceTimersByTimeAsync(1);
    expect(delivered).toEqual([far]);
    expect(scheduler.size).toBe(0);
    expect(jest.getTimerCount()).toBe(0);
  });

  it('leaves no timer behind on shutdown, and its timers never hold the process open', async () => {
    await scheduler.schedule(reminder(DAY));
    await scheduler.schedule(reminder(2 * DAY));
    expect(jest.getTimerCount()).toBe(2);
    await scheduler.onApplicationShutdown();
    expect(jest.getTimerCount()).toBe(0);
    await expect(scheduler.schedule(reminder(DAY))).rejects.toThrow(/shutting down/);
    await jest.advanceTimersByTimeAsync(3 * DAY);
    expect(delivered).toEqual([]);
  });

  it('refuses a reminder id it holds already', async () => {
    const once = reminder(DAY);
    await scheduler.schedule(once);
    await expect(scheduler.schedule({ ...once })).rejects.toThrow(/exists already/);
    await scheduler.onApplicationShutdown();
  });
});
