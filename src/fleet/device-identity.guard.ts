import { Injectable } from '@nestjs/common';
import type { IncomingMessage } from 'http';
import { AccessTokenService } from '../core/auth/access-token.service';
import { credentialDeviceOf } from '../core/auth/device-credential';
import { UpgradeContext, UpgradeGuard, UpgradeRefusedException } from '../core/ws/upgrade-guard';
import { DEVICE_ID_HEADER, DEVICE_ID_PARAMETER, deviceIdProblem } from './device-id';
import { Reachability } from './reachability';

/** An upgrade request once {@link DeviceIdentityGuard} has read the device it names. */
export interface DeviceRequest extends IncomingMessage {
  deviceId?: string;
  /** Who owns the id: the connecting principal, or another whose id its token is granted. */
  deviceOwner?: string;
}

/** The device id an accepted upgrade named, if any. */
export const deviceIdOf = (request: IncomingMessage): string | undefined => (request as DeviceRequest).deviceId;

/** The owner of the device id an accepted upgrade named. */
export const deviceOwnerOf = (request: IncomingMessage): string | undefined => (request as DeviceRequest).deviceOwner;

/**
 * Reads the device a connection names (`Device-Id` header, or `device_id` in the query for
 * clients that cannot set headers) after the bearer check, and refuses the upgrade when the id
 * is outside the alphabet (400), when the token may not connect as it (`devices` globs, 403), or
 * when the id belongs to another principal, online or not, and the token is not granted it (409).
 * The first principal to connect as an id owns it, decided in one atomic step, so two first
 * connections at once give one owner and one 409. A connection that names no device is an
 * ordinary client.
 */
@Injectable()
export class DeviceIdentityGuard implements UpgradeGuard {
  constructor(
    private readonly reachability: Reachability,
    private readonly tokens: AccessTokenService,
  ) {}

  async canUpgrade(context: UpgradeContext): Promise<void> {
    const header = context.request.headers[DEVICE_ID_HEADER];
    const deviceId = (Array.isArray(header) ? header[0] : header) ?? context.url.searchParams.get(DEVICE_ID_PARAMETER) ?? undefined;
    const credentialDevice = credentialDeviceOf(context.request);
    if (deviceId === undefined) {
      if (credentialDevice !== undefined) throw new UpgradeRefusedException(403, 'A device credential connects as its own device only: send its Device-Id');
      return;
    }
    const problem = deviceIdProblem(deviceId);
    if (problem) throw new UpgradeRefusedException(400, `Device-Id "${deviceId.slice(0, 80)}": ${problem}`);
    if (credentialDevice !== undefined && credentialDevice !== deviceId)
      throw new UpgradeRefusedException(403, `This credential is another device's: it may not connect as device "${deviceId}"`);
    const grant = this.tokens.grantOf(context.principal);
    // A device's own secret was issued for that id by its owner's activation: the owner's globs need not name it.
    if (credentialDevice === undefined && grant.devices && !grant.devices(deviceId)) {
      throw new UpgradeRefusedException(403, `Token "${grant.name}" may not connect as device "${deviceId}" (its devices in the tokens file)`);
    }
    const owner = await this.reachability.admit(deviceId, context.principal ?? '');
    if (owner !== (context.principal ?? '') && !grant.devices?.(deviceId)) {
      throw new UpgradeRefusedException(409, `Device id "${deviceId}" belongs to another token (DEVICE_ID_TAKEN); its owner can release it`);
    }
    Object.assign(context.request as DeviceRequest, { deviceId, deviceOwner: owner });
  }
}
