import { Logger } from '@nestjs/common';
import { FakeDevicePush, pause } from '../../../test/support/fake-device-push';
import { loadGatewayConfig } from '../../config/gateway-config';
import type { ToolCallContext } from '../../core/tools/tool-definition';
import { ToolError } from '../../core/tools/tool-error';
import { GatewayError } from '../../core/errors/gateway-error';
import { MemoryReminderScheduler } from './memory-reminder.scheduler';
import { DEFAULT_REMINDERS_OPTIONS, RemindersOptions } from './reminder';
import { ReminderDelivery } from './reminder-delivery';
import { parseDateTime, ReminderTools } from './reminder.tools';

const config = loadGatewayConfig({ DEFAULT_TIMEZONE: 'Asia/Shanghai' });
const OFFSET = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+08:00$/;

describe('reminder tools (in memory)', () => {
  beforeAll(() => Logger.overrideLogger(false));

  let push: FakeDevicePush;
  let scheduler: MemoryReminderScheduler;
  let tools: ReminderTools;

  /** The device's own voice connection (`kitchen`, token `alice`). */
  const device: ToolCallContext = { signal: new AbortController().signal, principal: 'alice', connectionId: 'conn-kitchen' };
  /** An agent (MCP, UTCP...) granted `kitchen` only. */
  const agent: ToolCallContext = { signal: new AbortController().signal, principal: 'agent', connectionId: 'conn-agent' };
  /** Someone granted nothing. */
  const stranger: ToolCallContext = { signal: new AbortController().signal, principal: 'mallory' };

  function build(options: Partial<RemindersOptions> = {}): void {
    const settings = { ...DEFAULT_REMINDERS_OPTIONS, ...options };
    push = new FakeDevicePush().grant('alice', 'kitchen').grant('agent', 'kitchen', 'hall');
    push.connections.set('conn-kitchen', 'kitchen');
    scheduler = new MemoryReminderScheduler(settings, new ReminderDelivery(push, settings.holdS, [20, 20]).deliver);
    tools = new ReminderTools(push, scheduler, settings, config);
  }

  beforeEach(() => build());
  afterEach(() => scheduler.onApplicationShutdown());

  const fails = async (call: Promise<unknown>, message: RegExp): Promise<ToolError> => {
    const error = await call.then(
      () => undefined,
      (reason: unknown) => reason,
    );
    expect(error).toBeInstanceOf(ToolError);
    expect((error as ToolError).message).toMatch(message);
    return error as ToolError;
  };

  it("speaks a due reminder once, on time, on the device's own connection", async () => {
    const started = Date.now();
    const set = await tools.setReminder({ in_s: 0.3, text: '  Tea is ready.  ' }, device);
    expect(set).toEqual({
      id: expect.stringMatching(/^rem_[0-9a-f]{16}$/),
      device_id: 'kitchen',
      due_at: expect.stringMatching(OFFSET),
      text: 'Tea is ready.',
      push_id: expect.stringMatching(/^reminder-rem_[0-9a-f]{16}$/),
      deliver_when_online: true,
    });
    expect(set.push_id).toBe(`reminder-${set.id}`);
    expect(push.pushes).toHaveLength(0);
    const [pushed] = await push.waitForPushes(1, 3000);
    expect(pushed.at - started).toBeGreaterThanOrEqual(290);
    expect(pushed.at - started).toBeLessThan(1000);
    expect(pushed).toMatchObject({ deviceId: 'kitchen', request: { text: 'Tea is ready.', reminderId: set.id, holdS: 3600 }, caller: { principal: 'alice' } });
    await pause(400);
    expect(push.pushes).toHaveLength(1);
    expect((await tools.listReminders({}, device)).reminders).toEqual([]);
  });

  it('lets an agent set a reminder on a device it may reach, and reports any other device as unknown', async () => {
    const set = await tools.setReminder({ in_s: 0.2, text: 'Door check', device_id: 'hall' }, agent);
    expect(set.device_id).toBe('hall');
    const [pushed] = await push.waitForPushes(1, 3000);
    expect(pushed).toMatchObject({ deviceId: 'hall', caller: { principal: 'agent' } });

    await fails(tools.setReminder({ in_s: 60, text: 'x', device_id: 'garage' }, agent), /Unknown device "garage"/);
    await fails(tools.setReminder({ in_s: 60, text: 'x', device_id: 'kitchen' }, stranger), /Unknown device "kitchen"/);
    await fails(tools.setReminder({ in_s: 60, text: 'x' }, agent), /named no device \(connect with a Device-Id header\)/);
    await fails(tools.listReminders({}, stranger), /named no device/);
    expect(scheduler.size).toBe(0);
  });

  it('takes an absolute time with its offset, and refuses one without, in the past, or too far ahead', async () => {
    const inAnHour = new Date(Date.now() + 3600_000);
    const at = `${inAnHour.toISOString().slice(0, 19)}Z`;
    const set = await tools.setReminder({ at, text: 'Stretch' }, device);
    expect(Date.parse(set.due_at)).toBe(Date.parse(at));
    expect(set.due_at).toMatch(OFFSET);

    await fails(tools.setReminder({ at: at.slice(0, -1), text: 'x' }, device), /must carry its UTC offset.*it is now .*\+08:00/);
    await fails(tools.setReminder({ at: 'tomorrow at noon', text: 'x' }, device), /not an ISO 8601 date-time/);
    await fails(tools.setReminder({ at: '2026-02-30T10:00:00+01:00', text: 'x' }, device), /not an ISO 8601 date-time/);
    await fails(tools.setReminder({ at: new Date(Date.now() - 60_000).toISOString(), text: 'x' }, device), /is in the past \(it is now /);
    await fails(tools.setReminder({ in_s: 367 * 86_400, text: 'x' }, device), /at most 366 days ahead/);
    await fails(tools.setReminder({ in_s: 60, at, text: 'x' }, device), /either at or in_s, not both/);
    await fails(tools.setReminder({ text: 'x' }, device), /give at .* or in_s/);
    await fails(tools.setReminder({ in_s: 60, text: '   ' }, device), /text must say something/);
    // A few seconds late is "now", not the past.
    const justNow = await tools.setReminder({ at: new Date(Date.now() - 2000).toISOString(), text: 'Now' }, device);
    expect(Date.parse(justNow.due_at)).toBeGreaterThan(Date.now() - 2000);
    await push.waitForPushes(1, 2000);
    expect(scheduler.size).toBe(1);
  });

  it('refuses a reminder past the per-device and per-principal bounds', async () => {
    build({ maxPerDevice: 2, maxPerPrincipal: 3 });
    await tools.setReminder({ in_s: 60, text: 'one' }, device);
    await tools.setReminder({ in_s: 61, text: 'two' }, device);
    const refused = await fails(
      tools.setReminder({ in_s: 62, text: 'three' }, device),
      /Device "kitchen" has 2 pending reminders already, the most it may have/,
    );
    expect(refused.details).toEqual({ limit: 'device', max: 2 });

    await tools.setReminder({ in_s: 60, text: 'a', device_id: 'hall' }, agent);
    await tools.setReminder({ in_s: 60, text: 'b', device_id: 'hall' }, agent);
    await fails(tools.setReminder({ in_s: 60, text: 'c', device_id: 'hall' }, agent), /Device "hall" has 2/);
    push.grant('agent', 'porch');
    await tools.setReminder({ in_s: 60, text: 'c', device_id: 'porch' }, agent);
    await fails(tools.setReminder({ in_s: 60, text: 'd', device_id: 'porch' }, agent), /You have 3 pending reminders already/);

    // A cancelled reminder no longer counts.
    const [first] = (await tools.listReminders({}, device)).reminders;
    await tools.cancelReminder({ id: first.id }, device);
    await tools.setReminder({ in_s: 62, text: 'three' }, device);
  });

  it('lists the pending reminders of a device earliest first, and cancels one so it is never spoken', async () => {
    const late = await tools.setReminder({ in_s: 120, text: 'late' }, device);
    const soon = await tools.setReminder({ in_s: 0.3, text: 'soon' }, device);
    const middle = await tools.setReminder({ in_s: 60, text: 'middle', device_id: 'kitchen' }, agent);
    await tools.setReminder({ in_s: 30, text: 'elsewhere', device_id: 'hall' }, agent);

    const listed = await tools.listReminders({}, device);
    expect(listed.device_id).toBe('kitchen');
    expect(listed.reminders.map((reminder) => reminder.text)).toEqual(['soon', 'middle', 'late']);
    expect(listed.reminders[0]).toEqual(soon);
    expect((await tools.listReminders({ device_id: 'kitchen' }, agent)).reminders.map((reminder) => reminder.id)).toEqual([soon.id, middle.id, late.id]);
    await fails(tools.listReminders({ device_id: 'hall' }, device), /Unknown device "hall"/);

    expect(await tools.cancelReminder({ id: soon.id }, device)).toEqual({ ...soon, cancelled: true });
    await fails(tools.cancelReminder({ id: soon.id }, device), /No pending reminder/);
    await fails(tools.cancelReminder({ id: 'rem_0000000000000000' }, device), /No pending reminder "rem_0000000000000000"/);
    await fails(tools.cancelReminder({ id: 'whatever' }, device), /No pending reminder/);
    // Not reachable: reported like an unknown one, and left alone.
    await fails(tools.cancelReminder({ id: middle.id }, stranger), /No pending reminder/);
    // The device's own model may cancel what an agent set on it.
    await tools.cancelReminder({ id: middle.id }, device);

    await pause(600);
    expect(push.pushes).toEqual([]);
    expect((await tools.listReminders({}, device)).reminders.map((reminder) => reminder.text)).toEqual(['late']);
  });

  it('tries a push refused for a passing reason again a few times, then drops it', async () => {
    push.behaviour = () => new GatewayError('DEVICE_BUSY', 'queue full');
    await tools.setReminder({ in_s: 0.1, text: 'Busy' }, device);
    // One attempt and two more (20 ms apart), then dropped.
    await push.waitForPushes(3, 3000);
    await pause(200);
    expect(push.pushes).toHaveLength(3);
    expect(push.pushes.every((pushed) => pushed.request.holdS === 3600)).toBe(true);
  });
});

describe('parseDateTime', () => {
  it('reads ISO 8601 date-times with an offset, and tells those without one', () => {
    expect(parseDateTime('2026-11-21T19:00:00+08:00')).toBe(Date.parse('2026-11-21T11:00:00Z'));
    expect(parseDateTime('2026-11-21T19:00+08:00')).toBe(Date.parse('2026-11-21T11:00:00Z'));
    expect(parseDateTime('2026-11-21 19:00:00.5-0130')).toBe(Date.parse('2026-11-21T20:30:00.500Z'));
    expect(parseDateTime('2026-11-21T19:00:00Z')).toBe(Date.parse('2026-11-21T19:00:00Z'));
    expect(parseDateTime('2026-11-21T19:00:00')).toBe('no-offset');
    expect(parseDateTime('2026-13-01T19:00:00Z')).toBeUndefined();
    expect(parseDateTime('2026-11-21T24:00:00Z')).toBeUndefined();
    expect(parseDateTime('2026-11-21T19:00:00+25:00')).toBeUndefined();
    expect(parseDateTime('7pm')).toBeUndefined();
  });
});
