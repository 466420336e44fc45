import { Logger } from '@nestjs/common';
import { FakeDevicePush } from '../../../test/support/fake-device-push';
import { GatewayError } from '../../core/errors/gateway-error';
import type { Reminder } from './reminder';
import { ReminderDelivery } from './reminder-delivery';

describe('ReminderDelivery', () => {
  beforeAll(() => Logger.overrideLogger(false));

  const dueAt = Date.parse('2026-11-21T10:00:00Z');
  const reminder: Reminder = { id: 'rem_0123456789abcdef', deviceId: 'kitchen', principal: 'alice', text: 'Tea', dueAt, createdAt: dueAt - 60_000 };
  const signal = new AbortController().signal;
  let push: FakeDevicePush;
  let now: number;
  const delivery = (holdS: number, retries: number[] = []) => new ReminderDelivery(push, holdS, retries, () => now);

  beforeEach(() => {
    push = new FakeDevicePush();
    now = dueAt;
  });

  it('pushes in the name of who set the reminder, held for its device for holdS', async () => {
    await delivery(3600).deliver(reminder, signal);
    expect(push.pushes).toEqual([
      expect.objectContaining({
        deviceId: 'kitchen',
        request: { text: 'Tea', reminderId: reminder.id, holdS: 3600, pushId: `reminder-${reminder.id}` },
        caller: { principal: 'alice' },
      }),
    ]);
  });

  it('does not hold a reminder set not to be delivered when its device is back: offline, its receipt expires', async () => {
    push.behaviour = () => new GatewayError('DEVICE_OFFLINE', 'offline');
    await delivery(3600, [1]).deliver({ ...reminder, deliverWhenOnline: false }, signal);
    expect(push.pushes.map(({ request }) => request.holdS)).toEqual([0]);
    expect(push.expired).toEqual([
      { push: { deviceId: 'kitchen', pushId: `reminder-${reminder.id}`, reminderId: reminder.id, reason: 'DEVICE_OFFLINE' }, caller: { principal: 'alice' } },
    ]);
  });

  it('marks the receipt of every reminder it gives up expired, with why: too late, or refused after its retries', async () => {
    now = dueAt + 3601_000;
    await delivery(3600).deliver(reminder, signal);
    push.behaviour = () => new GatewayError('DEVICE_BUSY', 'busy');
    now = dueAt;
    await delivery(3600, [1, 1]).deliver(reminder, signal);
    expect(push.pushes).toHaveLength(3);
    expect(push.expired.map(({ push: given }) => [given.pushId, given.reason])).toEqual([
      [`reminder-${reminder.id}`, 'late'],
      [`reminder-${reminder.id}`, 'DEVICE_BUSY'],
    ]);
  });

  it('gives a spoken reminder no expiry', async () => {
    await delivery(3600).deliver(reminder, signal);
    expect(push.expired).toEqual([]);
  });

  it('counts the time it was late against its hold, and drops it once the hold is spent', async () => {
    now = dueAt + 600_000;
    await delivery(3600).deliver(reminder, signal);
    expect(push.pushes[0].request.holdS).toBe(3000);
    now = dueAt + 3601_000;
    await delivery(3600).deliver(reminder, signal);
    expect(push.pushes).toHaveLength(1);
  });

  it('without a hold, speaks a reminder up to a minute late, and not later', async () => {
    now = dueAt + 30_000;
    await delivery(0).deliver(reminder, signal);
    expect(push.pushes[0].request.holdS).toBe(0);
    now = dueAt + 61_000;
    await delivery(0).deliver(reminder, signal);
    expect(push.pushes).toHaveLength(1);
  });

  it('drops at once a push that cannot succeed (offline and not held, forbidden), never rejecting', async () => {
    push.behaviour = () => new GatewayError('DEVICE_OFFLINE', 'offline');
    await expect(delivery(0, [1, 1]).deliver(reminder, signal)).resolves.toBeUndefined();
    expect(push.pushes).toHaveLength(1);
    push.behaviour = () => new Error('fleet hiccup');
    await expect(delivery(0, [1, 1]).deliver(reminder, signal)).resolves.toBeUndefined();
    expect(push.pushes).toHaveLength(4);
  });

  it('stops trying again on shutdown', async () => {
    push.behaviour = () => new GatewayError('DEVICE_BUSY', 'busy');
    const stop = new AbortController();
    const delivered = delivery(3600, [10_000]).deliver(reminder, stop.signal);
    await push.waitForPushes(1, 1000);
    stop.abort();
    await expect(delivered).resolves.toBeUndefined();
    expect(push.pushes).toHaveLength(1);
  });
});
