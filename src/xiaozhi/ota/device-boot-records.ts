import { Injectable } from '@nestjs/common';

/** What a device said of itself when it asked for its configuration. */
export interface DeviceBoot {
  deviceId: string;
  clientId?: string;
  /** `board/version`, the firmware's `User-Agent`. */
  userAgent?: string;
  /** When it asked, ISO 8601. */
  at: string;
}

/** Devices remembered at most: the oldest is forgotten past it, so a flood of made-up ids costs bounded memory. */
const MAX_RECORDS = 10_000;

/**
 * The last configuration request of each device that asked this instance, so its session can
 * show which board and firmware it runs. Kept in this instance's memory only: a device whose
 * configuration request and session reach different instances shows none.
 */
@Injectable()
export class DeviceBootRecords {
  private readonly records = new Map<string, DeviceBoot>();

  record(boot: DeviceBoot): void {
    this.records.delete(boot.deviceId);
    this.records.set(boot.deviceId, boot);
    if (this.records.size > MAX_RECORDS) this.records.delete(this.records.keys().next().value as string);
  }

  get(deviceId: string): DeviceBoot | undefined {
    return this.records.get(deviceId);
  }
}
