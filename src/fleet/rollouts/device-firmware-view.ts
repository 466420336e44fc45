import type { DeviceEntry } from '../device-entry';
import type { DeviceRollouts } from './device-rollouts';
import { parseUserAgent } from './firmware-version';

/** What the directory's view of a device says of its firmware. */
export interface DeviceFirmwareView {
  /** Its board (`BOARD_NAME`), from its `User-Agent`. */
  board?: string;
  /** The firmware version it runs, from its `User-Agent`. */
  firmware_version?: string;
  /** What rollouts apply to it: the firmware of its group (and whether its next configuration answer offers it), a moved endpoint. */
  rollout?: {
    firmware?: { rollout: string; firmware_id: string; version: string; offered: boolean };
    endpoint?: { rollout: string; websocket_url?: string; mqtt_endpoint?: string };
  };
}

/** The firmware part of a device's view; without `rollout` when no rollout applies or the rollouts cannot be read now. */
export async function deviceFirmwareView(rollouts: DeviceRollouts, entry: DeviceEntry): Promise<DeviceFirmwareView> {
  const { board, version } = parseUserAgent(entry.userAgent);
  const offer = await rollouts.offerFor({ id: entry.id, userAgent: entry.userAgent }, entry.owner ?? entry.principal).catch(() => ({}) as const);
  const rollout = {
    ...('firmware' in offer &&
      offer.firmware && {
        firmware: {
          rollout: offer.firmware.rollout,
          firmware_id: offer.firmware.firmware_id,
          version: offer.firmware.version,
          offered: offer.firmware.offer !== undefined,
        },
      }),
    ...('endpoint' in offer && offer.endpoint && { endpoint: offer.endpoint }),
  };
  return {
    ...(board !== undefined && { board }),
    ...(version !== undefined && { firmware_version: version }),
    ...(Object.keys(rollout).length > 0 && { rollout }),
  };
}
