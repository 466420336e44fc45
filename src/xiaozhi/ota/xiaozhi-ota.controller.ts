import { BadRequestException, Controller, Get, HttpCode, Inject, Logger, Optional, Post, Req } from '@nestjs/common';
import type { Request } from 'express';
import { GATEWAY_CONFIG, GatewayConfig } from '../../config/gateway-config';
import { Public } from '../../core/auth/route-access';
import { deviceIdProblem } from '../../fleet/device-id';
import { DeviceRollouts } from '../../fleet/rollouts/device-rollouts';
import { MQTT_KEEPALIVE_S, XiaozhiMqttServer } from '../mqtt/xiaozhi-mqtt.server';
import { configurationAnswer, ConfigurationAnswer, MqttSection, publicBaseUrl } from './configuration-answer';
import { DEVICE_BOOT_RECORDS, DeviceBootRecords } from './device-boot-records';
import { rolloutOverrides } from './rollout-overrides';
import { withDeviceCredential } from './device-credential-answer';
import { ActivationService } from '../../fleet/activation/activation.service';

const header = (request: Request, name: string): string | undefined => {
  const value = request.headers[name];
  return (Array.isArray(value) ? value[0] : value)?.slice(0, 256);
};

/**
 * The xiaozhi firmware's configuration request (its OTA URL, `main/ota.cc`): `POST` with the
 * board's description, or `GET` without one. Open to callers with no token, since the firmware
 * asks before it has any credential; what it hands out is the device token of
 * `XIAOZHI_DEVICE_TOKEN`, whose grant decides what a device may do, or with
 * `XIAOZHI_ACTIVATION=required` an activation code, then the device's own secret ({@link ActivationService}). A request without a valid
 * `Device-Id` is refused (400): the firmware always sends its MAC address.
 */
@Controller('xiaozhi/ota')
@Public()
export class XiaozhiOtaController {
  private readonly logger = new Logger('Xiaozhi');

  constructor(
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
    @Inject(DEVICE_BOOT_RECORDS) private readonly boots: DeviceBootRecords,
    @Optional() private readonly mqtt?: XiaozhiMqttServer,
    @Optional() private readonly rollouts?: DeviceRollouts,
    @Optional() private readonly activation?: ActivationService,
  ) {}

  @Post()
  @HttpCode(200)
  post(@Req() request: Request): Promise<ConfigurationAnswer> {
    return this.answer(request);
  }

  @Get()
  get(@Req() request: Request): Promise<ConfigurationAnswer> {
    return this.answer(request);
  }

  /** The answer; the device's report is kept for its session, and a store that fails costs the report, not the answer. */
  private async answer(request: Request): Promise<ConfigurationAnswer> {
    const deviceId = header(request, 'device-id');
    const problem = deviceId === undefined ? 'the Device-Id header is required' : deviceIdProblem(deviceId);
    if (problem) throw new BadRequestException(`Device-Id: ${problem}`);
    const boot = { deviceId: deviceId!, clientId: header(request, 'client-id'), userAgent: header(request, 'user-agent'), at: new Date().toISOString() };
    await this.boots.record(boot).catch((error: Error) => this.logger.warn(`Device ${boot.deviceId}: its board was not recorded: ${error.message}`));
    this.logger.log(`Device ${boot.deviceId} asked for its configuration (${boot.userAgent ?? 'no User-Agent'}, client ${boot.clientId ?? 'none'})`);
    const baseUrl = publicBaseUrl(this.config, request.headers.host, request.secure);
    const overrides = await rolloutOverrides(this.rollouts, boot, request.body, this.logger);
    const answer = configurationAnswer(this.config, baseUrl, new Date(), this.mqttSection(boot.deviceId, baseUrl), overrides);
    if (!this.activation?.enabled) return answer;
    const serial = header(request, 'serial-number');
    const decision = await this.activation.credentialFor({
      deviceId: boot.deviceId,
      clientId: boot.clientId ?? '',
      serial,
      address: request.socket.remoteAddress,
    });
    return withDeviceCredential(answer, decision);
  }

  /** With `XIAOZHI_TRANSPORT=mqtt`: the device's own MQTT credentials, and the endpoint (`XIAOZHI_MQTT_PUBLIC_ENDPOINT`, else the base URL's host and the MQTT port). */
  private mqttSection(deviceId: string, baseUrl: string): MqttSection | undefined {
    const settings = this.config.xiaozhi.mqtt;
    const credentials = this.mqtt?.credentials;
    if (this.config.xiaozhi.transport !== 'mqtt' || !settings || !credentials) return undefined;
    const endpoint = settings.publicEndpoint ?? `${new URL(baseUrl).hostname}:${this.mqtt!.port || settings.port}`;
    return { endpoint, ...credentials.issue(deviceId), keepalive: MQTT_KEEPALIVE_S };
  }
}
