import { Inject, Injectable } from '@nestjs/common';
import { AccessTokenService } from '../core/auth/access-token.service';
import { GatewayError, GatewayErrorCode } from '../core/errors/gateway-error';
import type { DeviceEntry } from './device-entry';
import { deviceIdProblem } from './device-id';
import type { FleetCaller } from './device-push';
import { FLEET_STORES, FleetStores } from './fleet-stores';
import { LocalDevices } from './local-devices';

/**
 * Who may reach which device. A device id belongs to its owner, the first principal that
 * connected as it, online or not (the directory decides that, atomically); a device is reached
 * by its owner, by the principal connected as it, and by a token whose `devices` globs grant it.
 * To anyone else it looks offline.
 */
@Injectable()
export class Reachability {
  constructor(
    @Inject(FLEET_STORES) private readonly stores: FleetStores,
    private readonly tokens: AccessTokenService,
    private readonly local: LocalDevices,
  ) {}

  /**
   * At a device's upgrade: the owner of `deviceId`, made `principal` if the id had none (see
   * `DeviceDirectory.admit`). A device this instance holds answers for itself, so its id stays its
   * owner's even while the shared store is being rebuilt.
   */
  async admit(deviceId: string, principal: string): Promise<string> {
    const local = this.local.get(deviceId)?.owner;
    if (local !== undefined && local !== principal) return local;
    return this.stores.directory.admit(deviceId, principal);
  }

  /** Whether `caller` reaches `deviceId`, whose owner (and, online, connecting principal) `device` names: internal callers always. */
  reaches(caller: FleetCaller, deviceId: string, device: Pick<DeviceEntry, 'owner' | 'principal'>): boolean {
    if (caller.principal === undefined) return true;
    if (caller.principal === (device.owner ?? device.principal) || caller.principal === device.principal) return true;
    return this.tokens.grantOf(caller.principal).devices?.(deviceId) ?? false;
  }

  /** Whether `caller` reaches `deviceId`, online or not. */
  async mayReach(caller: FleetCaller, deviceId: string): Promise<boolean> {
    const entry = this.stores.directory.lookup(deviceId);
    if (entry && this.reaches(caller, deviceId, entry)) return true;
    return this.reaches(caller, deviceId, { owner: await this.stores.directory.owner(deviceId) });
  }

  /** The online device as `caller` may see it; `undefined` when it is offline or not theirs. */
  visibleDevice(caller: FleetCaller, deviceId: string): DeviceEntry | undefined {
    const entry = this.stores.directory.lookup(deviceId);
    return entry && this.reaches(caller, deviceId, entry) ? entry : undefined;
  }

  /** Every online device `caller` may reach. */
  visibleDevices(caller: FleetCaller): DeviceEntry[] {
    const visible: DeviceEntry[] = [];
    for (const entry of this.stores.directory.all()) if (this.reaches(caller, entry.id, entry)) visible.push(entry);
    return visible;
  }

  /** The owner of `deviceId` if `caller` may reach it, online or not; `undefined` otherwise. */
  async ownerFor(caller: FleetCaller, deviceId: string): Promise<string | undefined> {
    const owner = await this.stores.directory.owner(deviceId);
    return owner !== undefined && this.reaches(caller, deviceId, { owner }) ? owner : undefined;
  }

  /** Something is pending for the device until `untilMs`: its id stays its owner's at least that long. */
  async keepOwned(deviceId: string, untilMs: number): Promise<void> {
    const owner = await this.stores.directory.owner(deviceId);
    if (owner !== undefined) await this.stores.directory.keepOwned(deviceId, owner, untilMs);
  }

  /**
   * Its owner gives an offline device's id up: another principal may connect as it. Returns the
   * owner it had; to anyone but the owner the id looks unknown (`NOT_FOUND`), and a connected
   * device is not released (`DEVICE_ID_TAKEN`).
   */
  async disown(deviceId: string, caller: FleetCaller): Promise<string> {
    checkDeviceId(deviceId);
    const owner = await this.stores.directory.owner(deviceId);
    const notYours = () => new GatewayError(GatewayErrorCode.NOT_FOUND, `No device "${deviceId}" of yours to release`);
    if (owner === undefined || (caller.principal !== undefined && caller.principal !== owner)) throw notYours();
    const outcome = await this.stores.directory.disown(deviceId, owner);
    if (outcome === 'online')
      throw new GatewayError(GatewayErrorCode.DEVICE_ID_TAKEN, `Device "${deviceId}" is connected: it can be released once it is offline`);
    if (outcome === 'not-owner') throw notYours();
    return owner;
  }
}

/** `id` as a device id, or `INVALID_MESSAGE` saying why it is none. */
export function checkDeviceId(id: unknown): string {
  const problem = deviceIdProblem(id);
  if (problem) throw new GatewayError(GatewayErrorCode.INVALID_MESSAGE, `${JSON.stringify(String(id).slice(0, 80))}: ${problem}`);
  return id as string;
}
