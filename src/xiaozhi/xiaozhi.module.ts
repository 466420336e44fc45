import { Inject, Logger, Module, OnApplicationBootstrap, OnModuleInit } from '@nestjs/common';
import { GATEWAY_CONFIG, GatewayConfig } from '../config/gateway-config';
import { AccessTokenService } from '../core/auth/access-token.service';
import { HealthIndicatorService } from '@nestjs/terminus';
import { SpeechEnginesModule } from '../assistant/speech-engines/speech-engines.module';
import { DrainService } from '../core/lifecycle/drain.service';
import { ProtocolRegistry } from '../core/protocols/protocol-registry';
import { ConnectionRegistry } from '../core/ws/connection-registry';
import { CLOSE_GOING_AWAY } from '../core/ws/gateway-ws.adapter';
import { HealthChecks } from '../health/health-checks';
import { HealthModule } from '../health/health.module';
import { LlmGatewayModule } from '../llm-gateway/llm-gateway.module';
import { FleetModule } from '../fleet/fleet.module';
import { DeviceMcpTools } from './device-mcp-tools';
import { DEVICE_BOOT_RECORDS, DeviceBootRecords, MemoryDeviceBootRecords, RedisDeviceBootRecords } from './ota/device-boot-records';
import { GatewayState } from '../core/state/gateway-state';
import { XiaozhiOtaController } from './ota/xiaozhi-ota.controller';
import { XiaozhiActivationController } from './ota/xiaozhi-activation.controller';
import { VoiceSessions } from './voice-sessions';
import { XiaozhiGateway } from './xiaozhi.gateway';
import { XIAOZHI_DECLARATION } from './xiaozhi.protocol';
import { XIAOZHI_PROTOCOL } from './xiaozhi-protocol-name';
import { XiaozhiUpgradeGuard } from './xiaozhi-upgrade.guard';
import { XiaozhiMqttServer } from './mqtt/xiaozhi-mqtt.server';

/**
 * xiaozhi voice devices: their configuration request (`/xiaozhi/ota/`) and their WebSocket
 * sessions (`/xiaozhi/v1/`), or MQTT + UDP sessions ({@link XiaozhiMqttServer}, when configured), heard and answered through the speech engines
 * ({@link SpeechEnginesModule}) and the LLM gateway's turn engine.
 */
@Module({
  imports: [HealthModule, LlmGatewayModule, FleetModule, SpeechEnginesModule.register()],
  controllers: [XiaozhiOtaController, XiaozhiActivationController],
  providers: [
    XiaozhiGateway,
    XiaozhiUpgradeGuard,
    XiaozhiMqttServer,
    VoiceSessions,
    DeviceMcpTools,
    {
      provide: DEVICE_BOOT_RECORDS,
      inject: [GatewayState],
      useFactory: (state: GatewayState) =>
        state.choose<DeviceBootRecords | Promise<DeviceBootRecords>>({
          memory: () => new MemoryDeviceBootRecords(),
          redis: (redis) => RedisDeviceBootRecords.connect(redis),
        }),
    },
  ],
})
export class XiaozhiModule implements OnModuleInit, OnApplicationBootstrap {
  constructor(
    checks: HealthChecks,
    indicators: HealthIndicatorService,
    drain: DrainService,
    connections: ConnectionRegistry,
    private readonly protocols: ProtocolRegistry,
    private readonly tokens: AccessTokenService,
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
  ) {
    checks.add('xiaozhi', () => indicators.check('xiaozhi').up({ connections: connections.count(XIAOZHI_PROTOCOL) }));
    // On shutdown each device finishes the answer it is hearing, then is told to reconnect (1001).
    drain.register('xiaozhi', async () => {
      await Promise.all(connections.list(XIAOZHI_PROTOCOL).map((connection) => connection.closeWhenIdle(CLOSE_GOING_AWAY, 'Server shutting down')));
    });
  }

  onModuleInit(): void {
    this.protocols.declare(XIAOZHI_DECLARATION);
    // A device's own secret (XIAOZHI_ACTIVATION=required) opens its xiaozhi sessions, and nothing else.
    this.tokens.acceptDeviceCredentialsOn(XIAOZHI_PROTOCOL);
  }

  /** A device token the gateway itself would refuse is told at start, not found out device by device. */
  onApplicationBootstrap(): void {
    const { deviceToken } = this.config.xiaozhi;
    if (deviceToken === undefined || !this.tokens.enabled) return;
    if (!this.tokens.authenticate(deviceToken).ok)
      new Logger('Xiaozhi').warn(
        "XIAOZHI_DEVICE_TOKEN is none of the gateway's tokens (AUTH_TOKENS, AUTH_TOKENS_FILE): devices that are given it will be refused",
      );
  }
}
