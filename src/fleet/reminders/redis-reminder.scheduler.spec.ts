import { Logger } from '@nestjs/common';
import { Queue, Worker } from 'bullmq';
import type Redis from 'ioredis';
import { FakeDevicePush, pause } from '../../../test/support/fake-device-push';
import { inspector, removeKeys, TEST_REDIS_URL, uniquePrefix } from '../../../test/support/redis';
import { bullPrefixOf, REMINDER_QUEUE, RedisReminderScheduler, RedisReminderTuning } from './redis-reminder.scheduler';
import { newReminderId, Reminder, ReminderLimitError } from './reminder';
import { ReminderDelivery } from './reminder-delivery';
import { RedisConnections } from '../../core/state/shared-redis';

/** Short locks, so a killed worker's job is taken over within about two seconds. */
const TUNING: Partial<RedisReminderTuning> = { lockDurationMs: 1000, stalledIntervalMs: 500, shutdownWaitMs: 1000 };
const LIMITS = { maxPerDevice: 5, maxPerPrincipal: 8 };

jest.setTimeout(15_000);

describe('RedisReminderScheduler', () => {
  let redis: Redis;
  let prefix: string;
  const running: RedisReminderScheduler[] = [];

  beforeAll(async () => {
    Logger.overrideLogger(false);
    redis = await inspector();
  });
  afterAll(async () => {
    await redis.quit();
  });
  beforeEach(() => {
    prefix = uniquePrefix();
  });
  afterEach(async () => {
    await Promise.all(running.splice(0).map((scheduler) => scheduler.close(true)));
    await removeKeys(redis, prefix);
  });

  /** An instance of the gateway's reminders on the test's prefix, pushing through `push`. */
  async function start(push: FakeDevicePush, tuning: Partial<RedisReminderTuning> = TUNING): Promise<RedisReminderScheduler> {
    const scheduler = await RedisReminderScheduler.connect(
      new RedisConnections(TEST_REDIS_URL, prefix),
      LIMITS,
      new ReminderDelivery(push, 3600, [50]).deliver,
      tuning,
    );
    running.push(scheduler);
    return scheduler;
  }

  /** A reminder due in `inMs`, set by `principal` (`null`: the anonymous principal, auth off). */
  function reminder(inMs: number, text = 'Tea', deviceId = 'kitchen', principal: string | null = 'alice'): Reminder {
    const now = Date.now();
    return { id: newReminderId(), deviceId, principal: principal ?? undefined, text, dueAt: now + inMs, createdAt: now };
  }

  /** The job of reminder `id` as BullMQ holds it (`undefined` once done and removed). */
  async function jobState(id: string): Promise<string | undefined> {
    const queue = new Queue(REMINDER_QUEUE, { connection: { host: redis.options.host, port: redis.options.port }, prefix: bullPrefixOf(prefix) });
    try {
      const job = await queue.getJob(id);
      return job ? await job.getState() : undefined;
    } finally {
      await queue.close();
    }
  }

  /** Polls `check` until it holds, for at most `timeoutMs`. */
  async function eventually(check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error(`not so after ${timeoutMs} ms`);
      await pause(50);
    }
  }

  it('speaks a due reminder once, on time, then forgets it', async () => {
    const push = new FakeDevicePush();
    const scheduler = await start(push);
    const due = reminder(400);
    await scheduler.schedule(due);
    expect(await scheduler.get(due.id)).toEqual(due);
    const [pushed] = await push.waitForPushes(1, 3000);
    expect(pushed.at - due.dueAt).toBeGreaterThanOrEqual(-5);
    expect(pushed.at - due.dueAt).toBeLessThan(1000);
    expect(pushed).toMatchObject({ deviceId: 'kitchen', request: { text: 'Tea', reminderId: due.id, holdS: 3600 }, caller: { principal: 'alice' } });
    await pause(500);
    expect(push.pushes).toHaveLength(1);
    expect(await scheduler.get(due.id)).toBeUndefined();
    expect(await scheduler.listForDevice('kitchen')).toEqual([]);
    await eventually(async () => (await jobState(due.id)) === undefined, 2000);
    expect(await redis.keys(`${prefix}reminders:*`)).toEqual([]);
    expect(await redis.exists(`${prefix}reminder-fired:${due.id}`)).toBe(1);
  });

  it('speaks each reminder exactly once with two instances on one Redis', async () => {
    const pushes = [new FakeDevicePush(), new FakeDevicePush()];
    const instances = [await start(pushes[0]), await start(pushes[1])];
    const due = Array.from({ length: 12 }, (_, index) => reminder(600 + (index % 3) * 10, `r${index}`, `device-${index % 4}`, `p${index % 2}`));
    await Promise.all(due.map((each, index) => instances[index % 2].schedule(each)));
    const spoken = () => [...pushes[0].pushes, ...pushes[1].pushes];
    await eventually(async () => spoken().length >= due.length, 4000);
    await pause(800);
    expect(
      spoken()
        .map((pushed) => pushed.request.reminderId)
        .sort(),
    ).toEqual(due.map((each) => each.id).sort());
  });

  it('lists a device’s reminders earliest first, cancels one so it is never spoken, and keeps to the bounds', async () => {
    const push = new FakeDevicePush();
    const scheduler = await start(push);
    const late = reminder(60_000, 'late');
    const soon = reminder(500, 'soon');
    const middle = reminder(30_000, 'middle', 'kitchen', 'agent');
    for (const each of [late, soon, middle, reminder(10_000, 'elsewhere', 'hall')]) await scheduler.schedule(each);
    expect((await scheduler.listForDevice('kitchen')).map((each) => each.text)).toEqual(['soon', 'middle', 'late']);

    expect(await scheduler.cancel(soon.id)).toEqual(soon);
    expect(await scheduler.cancel(soon.id)).toBeUndefined();
    expect(await scheduler.cancel(newReminderId())).toBeUndefined();
    expect(await jobState(soon.id)).toBeUndefined();
    expect((await scheduler.listForDevice('kitchen')).map((each) => each.text)).toEqual(['middle', 'late']);

    // kitchen has 2 (middle, late): it takes 3 more, then is full.
    for (let index = 0; index < 3; index += 1) await scheduler.schedule(reminder(60_000, `more ${index}`, 'kitchen', 'agent'));
    await expect(scheduler.schedule(reminder(60_000, 'one too many'))).rejects.toEqual(new ReminderLimitError('device', 5));
    // alice has 2 (late, and one on the hall): 6 more on other devices make 8, the most.
    for (let index = 0; index < 6; index += 1) await scheduler.schedule(reminder(60_000, `alice ${index}`, `room-${index}`));
    await expect(scheduler.schedule(reminder(60_000, 'over', 'attic'))).rejects.toMatchObject({ limit: 'principal', max: 8 });
    // The anonymous principal (auth off) is bounded too.
    for (let index = 0; index < 8; index += 1) await scheduler.schedule(reminder(60_000, `anon ${index}`, `anon-room-${index}`, null));
    await expect(scheduler.schedule(reminder(60_000, 'over', 'anon-attic', null))).rejects.toMatchObject({ limit: 'principal' });

    await pause(800);
    expect(push.pushes).toEqual([]);
  });

  it('keeps reminders across a restart: a new instance on the same Redis speaks them', async () => {
    const first = new FakeDevicePush();
    const before = await start(first);
    const due = reminder(1200);
    await before.schedule(due);
    await before.close();
    const second = new FakeDevicePush();
    const after = await start(second);
    expect(await after.listForDevice('kitchen')).toEqual([due]);
    await second.waitForPushes(1, 4000);
    await pause(300);
    expect(second.pushes.map((pushed) => pushed.request.reminderId)).toEqual([due.id]);
    expect(first.pushes).toEqual([]);
  });

  it('speaks the reminders of an instance stopped abruptly, once, from another', async () => {
    const first = new FakeDevicePush();
    const killed = await start(first);
    const due = reminder(800);
    await killed.schedule(due);
    await killed.close(true);
    const second = new FakeDevicePush();
    await start(second);
    await second.waitForPushes(1, 4000);
    await pause(300);
    expect([...first.pushes, ...second.pushes].map((pushed) => pushed.request.reminderId)).toEqual([due.id]);
  });

  it('takes over the job of a worker killed while it held it, and speaks the reminder once', async () => {
    const producer = await start(new FakeDevicePush());
    const due = reminder(300);
    await producer.schedule(due);
    await producer.close();
    // A worker that takes the job and dies before doing anything with it (SIGKILL).
    let taken!: () => void;
    const tookIt = new Promise<void>((resolve) => (taken = resolve));
    const doomed = new Worker(
      REMINDER_QUEUE,
      () => {
        taken();
        return new Promise(() => undefined);
      },
      { connection: { host: redis.options.host, port: redis.options.port }, prefix: bullPrefixOf(prefix), lockDuration: 1000 },
    );
    doomed.on('error', () => undefined);
    await tookIt;
    await doomed.close(true);
    expect(await jobState(due.id)).toBe('active');

    const survivor = new FakeDevicePush();
    await start(survivor);
    const [pushed] = await survivor.waitForPushes(1, 5000);
    expect(pushed.request.reminderId).toBe(due.id);
    await eventually(async () => (await jobState(due.id)) === undefined, 3000);
    await pause(300);
    expect(survivor.pushes).toHaveLength(1);
  });

  it('never speaks twice the reminder of a worker killed after its push, before its job ended', async () => {
    const first = new FakeDevicePush();
    first.behaviour = () => 'hang';
    const killed = await start(first);
    const due = reminder(300);
    await killed.schedule(due);
    await first.waitForPushes(1, 3000);
    await killed.close(true);
    expect(await jobState(due.id)).toBe('active');

    const second = new FakeDevicePush();
    await start(second);
    // Its lock expires and the survivor's stalled check runs the job again: nothing left to speak.
    await eventually(async () => (await jobState(due.id)) === undefined, 5000);
    await pause(300);
    expect(first.pushes).toHaveLength(1);
    expect(second.pushes).toEqual([]);
  });

  it('refuses new reminders once closing; closing twice is closing once', async () => {
    const scheduler = await start(new FakeDevicePush());
    await Promise.all([scheduler.close(), scheduler.close()]);
    await expect(scheduler.schedule(reminder(1000))).rejects.toThrow(/shutting down/);
  });
});
