import { Module } from '@nestjs/common';
import { HealthIndicatorService } from '@nestjs/terminus';
import { GATEWAY_CONFIG, GatewayConfig } from '../config/gateway-config';
import { HealthModule } from '../health/health.module';
import { HealthChecks } from '../health/health-checks';
import { DEVICE_PUSH } from './device-push';
import { DeviceIdentityGuard } from './device-identity.guard';
import { DeviceToolCatalogue } from './device-tool-catalogue';
import { DevicesController } from './devices.controller';
import { FLEET_STORES, openFleetStores } from './fleet-stores';
import { FleetService } from './fleet.service';
import { FleetTools } from './fleet.tools';

/**
 * Every device reachable: the directory of devices online (in memory, or in Redis across
 * replicas), their tools for agents, speech pushed to them, the `/devices` routes and the
 * `device_say` tool. The LLM gateway attaches its connections that named a device.
 */
@Module({
  imports: [HealthModule],
  providers: [
    { provide: FLEET_STORES, inject: [GATEWAY_CONFIG], useFactory: (config: GatewayConfig) => openFleetStores(config) },
    FleetService,
    { provide: DEVICE_PUSH, useExisting: FleetService },
    DeviceIdentityGuard,
    DeviceToolCatalogue,
    FleetTools,
  ],
  controllers: [DevicesController],
  exports: [FleetService, DEVICE_PUSH, DeviceIdentityGuard, DeviceToolCatalogue],
})
export class FleetModule {
  constructor(checks: HealthChecks, indicators: HealthIndicatorService, fleet: FleetService) {
    // Ready only while the shared directory holds every device connected here: after Redis lost
    // its data, until they are registered again, agents on other instances cannot reach them.
    checks.add(
      'fleet',
      () => {
        const check = indicators.check('fleet');
        const details = { devices: fleet.directory.size, local: fleet.localCount };
        return fleet.directory.complete
          ? check.up(details)
          : check.down({ ...details, message: 'The device directory is being rebuilt: devices connected here are not all registered yet' });
      },
      ['ready'],
    );
  }
}
