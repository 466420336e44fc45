import { DynamicModule, Module, ModuleMetadata, Provider } from '@nestjs/common';
import { GATEWAY_CONFIG, GatewayConfig } from '../../config/gateway-config';
import { REDIS_PERSISTENCE, RedisPersistenceWatch } from '../../core/redis/redis-persistence-watch';
import { GatewayState } from '../../core/state/gateway-state';
import { DEVICE_PUSH, DevicePush } from '../device-push';
import { MemoryReminderScheduler } from './memory-reminder.scheduler';
import { RedisReminderScheduler } from './redis-reminder.scheduler';
import { REMINDER_SCHEDULER, ReminderScheduler, REMINDERS_OPTIONS, RemindersOptions } from './reminder';
import { ReminderDelivery } from './reminder-delivery';
import { ReminderTools } from './reminder.tools';

/**
 * The settings of reminders (`GatewayConfig.fleet.reminders`). The hold never exceeds the longest
 * the fleet holds a push (`fleet.holdMaxS`), which it would refuse.
 */
export function remindersOptionsFrom({ fleet }: GatewayConfig): RemindersOptions {
  return { ...fleet.reminders, holdS: Math.min(fleet.reminders.holdS, fleet.holdMaxS) };
}

const PROVIDERS: Provider[] = [
  { provide: REMINDERS_OPTIONS, inject: [GATEWAY_CONFIG], useFactory: remindersOptionsFrom },
  {
    provide: REMINDER_SCHEDULER,
    inject: [GatewayState, REMINDERS_OPTIONS, DEVICE_PUSH],
    useFactory: (state: GatewayState, options: RemindersOptions, push: DevicePush) => {
      const { deliver } = new ReminderDelivery(push, options.holdS);
      return state.choose<ReminderScheduler | Promise<ReminderScheduler>>({
        memory: () => new MemoryReminderScheduler(options, deliver),
        redis: (redis) => RedisReminderScheduler.connect(redis, options, deliver),
      });
    },
  },
  // Reminders and held pushes live in Redis alone: whether it keeps them across its restarts is
  // told at start (a warning when it does not) and watched (`gateway_redis_persistent`).
  {
    provide: REDIS_PERSISTENCE,
    inject: [GatewayState],
    useFactory: (state: GatewayState) => state.choose({ memory: () => undefined, redis: (redis) => RedisPersistenceWatch.connect(redis) }),
  },
  ReminderTools,
];

/**
 * The `set_reminder`, `list_reminders` and `cancel_reminder` tools, and the scheduler that
 * speaks reminders when they fall due: in Redis with BullMQ when `REDIS_URL` is set, in memory
 * otherwise. Needs `GATEWAY_CONFIG` (the global `GatewayModule`) and `DEVICE_PUSH`: import
 * `RemindersModule.register({ imports: [ModuleExportingDevicePush] })`, or
 * `RemindersModule.register()` when a global module exports `DEVICE_PUSH`.
 */
@Module({})
export class RemindersModule {
  /** The module, importing `imports` (the module that exports `DEVICE_PUSH`, unless a global one does). */
  static register({ imports = [] }: Pick<ModuleMetadata, 'imports'> = {}): DynamicModule {
    return { module: RemindersModule, imports, providers: PROVIDERS, exports: [REMINDER_SCHEDULER, REMINDERS_OPTIONS] };
  }
}
