import { Injectable } from '@nestjs/common';
import type { IncomingMessage } from 'http';
import { AccessTokenService } from '../core/auth/access-token.service';
import { UpgradeContext, UpgradeGuard, UpgradeRefusedException } from '../core/ws/upgrade-guard';
import { DEVICE_ID_HEADER, DEVICE_ID_PARAMETER, deviceIdProblem } from './device-id';
import { FleetService } from './fleet.service';

/** An upgrade request once {@link DeviceIdentityGuard} has read the device it names. */
export interface DeviceRequest extends IncomingMessage {
  deviceId?: string;
}

/** The device id an accepted upgrade named, if any. */
export const deviceIdOf = (request: IncomingMessage): string | undefined => (request as DeviceRequest).deviceId;

/**
 * Reads the device a connection names (`Device-Id` header, or `device_id` in the query for
 * clients that cannot set headers) after the bearer check, and refuses the upgrade when the id
 * is outside the alphabet (400), when the token may not connect as it (`devices` globs, 403), or
 * when another principal's device is online with it and the token is not granted it (409). A
 * connection that names no device is an ordinary client.
 */
@Injectable()
export class DeviceIdentityGuard implements UpgradeGuard {
  constructor(
    private readonly fleet: FleetService,
    private readonly tokens: AccessTokenService,
  ) {}

  async canUpgrade(context: UpgradeContext): Promise<void> {
    const header = context.request.headers[DEVICE_ID_HEADER];
    const deviceId = (Array.isArray(header) ? header[0] : header) ?? context.url.searchParams.get(DEVICE_ID_PARAMETER) ?? undefined;
    if (deviceId === undefined) return;
    const problem = deviceIdProblem(deviceId);
    if (problem) throw new UpgradeRefusedException(400, `Device-Id "${deviceId.slice(0, 80)}": ${problem}`);
    const grant = this.tokens.grantOf(context.principal);
    if (grant.devices && !grant.devices(deviceId)) {
      throw new UpgradeRefusedException(403, `Token "${grant.name}" may not connect as device "${deviceId}" (its devices in the tokens file)`);
    }
    const online = await this.fleet.directory.fetch(deviceId);
    if (online && online.principal !== context.principal && !grant.devices?.(deviceId)) {
      throw new UpgradeRefusedException(409, `Device "${deviceId}" is connected with another token`);
    }
    (context.request as DeviceRequest).deviceId = deviceId;
  }
}
