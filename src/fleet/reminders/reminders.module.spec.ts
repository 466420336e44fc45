import { Logger } from '@nestjs/common';
import { Test, TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { FakeDevicePush } from '../../../test/support/fake-device-push';
import { inspector, removeKeys, TEST_REDIS_URL, uniquePrefix } from '../../../test/support/redis';
import { loadGatewayConfig } from '../../config/gateway-config';
import { ToolRegistryService } from '../../core/tools/tool-registry.service';
import { GatewayModule } from '../../gateway.module';
import { DEVICE_PUSH } from '../device-push';
import { MemoryReminderScheduler } from './memory-reminder.scheduler';
import { RedisReminderScheduler } from './redis-reminder.scheduler';
import { DEFAULT_REMINDERS_OPTIONS, REMINDER_SCHEDULER, REMINDERS_OPTIONS } from './reminder';
import { remindersOptionsFrom } from './reminders.module';

jest.setTimeout(15_000);

describe('RemindersModule', () => {
  let push: FakeDevicePush;

  beforeAll(() => Logger.overrideLogger(false));
  beforeEach(() => {
    push = new FakeDevicePush().grant('agent', 'kitchen');
    push.connections.set('conn-kitchen', 'kitchen');
  });

  async function boot(settings: Record<string, string> = {}): Promise<TestingModule> {
    // The gateway imports the module; the fleet's push is replaced by one the test controls.
    const moduleRef = await Test.createTestingModule({ imports: [GatewayModule.forRoot({ settings: { DEFAULT_TIMEZONE: 'UTC', ...settings } })] })
      .overrideProvider(DEVICE_PUSH)
      .useFactory({ factory: () => push })
      .compile();
    await moduleRef.init();
    return moduleRef;
  }

  async function call(moduleRef: TestingModule, name: string, args: object, connectionId?: string, principal?: string) {
    const registry = moduleRef.get(ToolRegistryService);
    const prepared = registry.prepare(name, args, connectionId, principal);
    if (prepared.problem) return { ok: false as const, code: prepared.problem.code, message: prepared.problem.message };
    return registry.run(prepared, { connectionId, principal });
  }

  it('adds the three tools to the catalogue, with their arguments checked, and speaks through DEVICE_PUSH', async () => {
    const moduleRef = await boot();
    const registry = moduleRef.get(ToolRegistryService);
    for (const name of ['set_reminder', 'list_reminders', 'cancel_reminder']) expect(registry.get(name)).toMatchObject({ source: 'builtin' });
    expect(moduleRef.get(REMINDER_SCHEDULER)).toBeInstanceOf(MemoryReminderScheduler);
    expect(moduleRef.get(REMINDERS_OPTIONS)).toEqual(DEFAULT_REMINDERS_OPTIONS);

    expect(await call(moduleRef, 'set_reminder', { in_s: 60, text: 'x', when: 'soon' }, 'conn-kitchen')).toMatchObject({
      ok: false,
      message: expect.stringMatching(/unexpected argument "when"/),
    });
    expect(await call(moduleRef, 'set_reminder', { in_s: 60, text: 'x'.repeat(501) }, 'conn-kitchen')).toMatchObject({
      ok: false,
      code: 'INVALID_TOOL_PARAMETERS',
    });
    expect(await call(moduleRef, 'set_reminder', { in_s: 0, text: 'x' }, 'conn-kitchen')).toMatchObject({ ok: false, code: 'INVALID_TOOL_PARAMETERS' });
    expect(await call(moduleRef, 'set_reminder', { in_s: 60, text: 'x' }, 'conn-mcp', 'agent')).toMatchObject({
      ok: false,
      code: 'TOOL_EXECUTION_FAILED',
      message: expect.stringMatching(/named no device \(connect with a Device-Id header\)/),
    });

    const set = await call(moduleRef, 'set_reminder', { in_s: 0.2, text: 'Tea' }, 'conn-kitchen', 'alice');
    expect(set).toMatchObject({ ok: true, value: { device_id: 'kitchen', due_at: expect.stringMatching(/\+00:00$/), text: 'Tea' } });
    const [pushed] = await push.waitForPushes(1, 3000);
    expect(pushed).toMatchObject({ deviceId: 'kitchen', caller: { principal: 'alice' } });

    const later = await call(moduleRef, 'set_reminder', { in_s: 600, text: 'Later', device_id: 'kitchen' }, 'conn-mcp', 'agent');
    expect(await call(moduleRef, 'list_reminders', {}, 'conn-kitchen', 'alice')).toMatchObject({
      ok: true,
      value: { device_id: 'kitchen', reminders: [{ text: 'Later' }] },
    });
    const id = (later as { value: { id: string } }).value.id;
    expect(await call(moduleRef, 'cancel_reminder', { id }, 'conn-kitchen', 'alice')).toMatchObject({ ok: true, value: { id, cancelled: true } });
    await moduleRef.close();
  });

  it('keeps reminders in Redis with REDIS_URL: closed before one fell due, the next start speaks it', async () => {
    const prefix = uniquePrefix();
    const redis: Redis = await inspector();
    try {
      const first = await boot({ REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: prefix });
      expect(first.get(REMINDER_SCHEDULER)).toBeInstanceOf(RedisReminderScheduler);
      const set = await call(first, 'set_reminder', { in_s: 1.5, text: 'After the restart' }, 'conn-kitchen', 'alice');
      expect(set).toMatchObject({ ok: true });
      await first.close();
      expect(push.pushes).toEqual([]);

      const second = await boot({ REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: prefix });
      const [pushed] = await push.waitForPushes(1, 5000);
      expect(pushed.request).toMatchObject({ text: 'After the restart', reminderId: (set as { value: { id: string } }).value.id });
      await second.close();
    } finally {
      await removeKeys(redis, prefix);
      await redis.quit();
    }
  });

  it('reads its settings from the FLEET_REMINDER* settings', () => {
    expect(remindersOptionsFrom(loadGatewayConfig({}))).toEqual(DEFAULT_REMINDERS_OPTIONS);
    expect(remindersOptionsFrom(loadGatewayConfig({ FLEET_REMINDERS_MAX_PER_DEVICE: 3, FLEET_REMINDER_HOLD_S: 0 }))).toEqual({
      ...DEFAULT_REMINDERS_OPTIONS,
      maxPerDevice: 3,
      holdS: 0,
    });
    // Never held longer than the fleet holds a push.
    expect(remindersOptionsFrom(loadGatewayConfig({ FLEET_HOLD_MAX_S: 600 })).holdS).toBe(600);
  });
});
