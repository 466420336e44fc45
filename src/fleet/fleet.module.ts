import { Inject, Module } from '@nestjs/common';
import { HealthIndicatorService } from '@nestjs/terminus';
import { GATEWAY_CONFIG } from '../config/gateway-config';
import { GatewayState } from '../core/state/gateway-state';
import { HealthModule } from '../health/health.module';
import { HealthChecks } from '../health/health-checks';
import { BudgetTools } from './budgets/budget.tools';
import { DeviceBudgets } from './budgets/device-budgets';
import { DeviceBudgetsController } from './budgets/device-budgets.controller';
import { ACTIVATION_PROVIDERS } from './activation/activation.providers';
import { ActivationController } from './activation/activation.controller';
import { ActivationService } from './activation/activation.service';
import { DEVICE_PUSH } from './device-push';
import { DeviceIdentityGuard } from './device-identity.guard';
import { DeviceToolCatalogue } from './device-tool-catalogue';
import { DevicesController } from './devices.controller';
import { FLEET_STORES, FleetStores, openFleetStores } from './fleet-stores';
import { DevicePushes } from './device-pushes';
import { FleetTools } from './fleet.tools';
import { LocalDevices } from './local-devices';
import { Reachability } from './reachability';
import { ReplicaMessaging } from './replicas/replica-messaging';
import { DeviceRollouts } from './rollouts/device-rollouts';
import { MemoryRolloutStore, RedisRolloutStore, ROLLOUT_STORE, RolloutStore } from './rollouts/rollout-store';
import { RolloutsController } from './rollouts/rollouts.controller';
import { RolloutTools } from './rollouts/rollout.tools';
import { openPushReceipts, PushReceipts } from './receipts/push-receipts';
import { PushesController } from './receipts/pushes.controller';

/**
 * Every device reachable, whatever protocol it speaks, each job in its own part:
 * - the stores (`FleetStores`): the directory of devices online and of who owns each id, held
 *   pushes, the way to other instances (in memory, or in Redis across replicas);
 * - `ReplicaMessaging`: requests and notices between instances, a handler per kind;
 * - `LocalDevices`: the device connections this instance holds (a protocol attaches a
 *   `DeviceLink` for each);
 * - `Reachability`: who may reach which device, and who owns each id;
 * - `DevicePushes`: speech pushed to devices, fan-outs and held pushes (`DEVICE_PUSH`);
 * - `PushReceipts`: each push's delivery receipt (`GET /pushes/<id>`, the webhook);
 * - `DeviceToolCatalogue`: devices' tools for agents, run where each device is.
 * - `DeviceRollouts`: firmware rollouts and endpoint moves, offered in devices' configuration answers;
 * - activation (`activation/`): owners bind devices by code, each bound device gets a secret of its own.
 * Also the `/devices` and `/fleet` routes, the `device_say` and `release_device` tools and the rollouts' tools.
 */
@Module({
  imports: [HealthModule],
  providers: [
    { provide: FLEET_STORES, inject: [GatewayState, GATEWAY_CONFIG], useFactory: openFleetStores },
    { provide: PushReceipts, inject: [GatewayState, GATEWAY_CONFIG], useFactory: openPushReceipts },
    ReplicaMessaging,
    LocalDevices,
    Reachability,
    DevicePushes,
    { provide: DEVICE_PUSH, useExisting: DevicePushes },
    DeviceIdentityGuard,
    DeviceToolCatalogue,
    FleetTools,
    DeviceBudgets,
    BudgetTools,
    {
      provide: ROLLOUT_STORE,
      inject: [GatewayState],
      useFactory: (state: GatewayState) =>
        state.choose<RolloutStore | Promise<RolloutStore>>({ memory: () => new MemoryRolloutStore(), redis: (redis) => RedisRolloutStore.connect(redis) }),
    },
    DeviceRollouts,
    RolloutTools,
    ...ACTIVATION_PROVIDERS,
  ],
  controllers: [DevicesController, DeviceBudgetsController, RolloutsController, ActivationController, PushesController],
  exports: [
    LocalDevices,
    Reachability,
    DevicePushes,
    DEVICE_PUSH,
    DeviceIdentityGuard,
    DeviceToolCatalogue,
    FLEET_STORES,
    DeviceRollouts,
    ActivationService,
    PushReceipts,
  ],
})
export class FleetModule {
  constructor(checks: HealthChecks, indicators: HealthIndicatorService, @Inject(FLEET_STORES) stores: FleetStores, local: LocalDevices, state: GatewayState) {
    // With Redis, ready only while the shared directory holds every device connected here: after
    // Redis lost its data, until they are registered again, agents on other instances cannot
    // reach them. (In memory the directory is this instance's own, always whole.)
    if (!state.shared) return;
    checks.add(
      'fleet',
      () => {
        const check = indicators.check('fleet');
        const details = { devices: stores.directory.size, local: local.count };
        return stores.directory.complete
          ? check.up(details)
          : check.down({ ...details, message: 'The device directory is being rebuilt: devices connected here are not all registered yet' });
      },
      ['ready'],
    );
  }
}
