import type Redis from 'ioredis';
import type { SharedRedis } from '../../core/state/shared-redis';

/** What a device said of itself when it asked for its configuration. */
export interface DeviceBoot {
  deviceId: string;
  clientId?: string;
  /** `board/version`, the firmware's `User-Agent`. */
  userAgent?: string;
  /** When it asked, ISO 8601. */
  at: string;
}

/**
 * The last configuration request of each device, so its session (on whichever instance it lands)
 * can show which board and firmware it runs. Kept for {@link BOOT_RECORD_TTL_S} after the
 * request, so ids made up by a flood of requests do not stay.
 */
export interface DeviceBootRecords {
  record(boot: DeviceBoot): Promise<void>;
  get(deviceId: string): Promise<DeviceBoot | undefined>;
}

/** DI token of the {@link DeviceBootRecords}. */
export const DEVICE_BOOT_RECORDS = Symbol('DEVICE_BOOT_RECORDS');

/** A device asks at every boot; a month covers one that stays up that long between boots. */
export const BOOT_RECORD_TTL_S = 30 * 24 * 3600;
/** Devices an instance remembers in memory at most: the oldest is forgotten past it. */
const MAX_RECORDS = 10_000;

/** This instance's memory: for a gateway without Redis (one instance). */
export class MemoryDeviceBootRecords implements DeviceBootRecords {
  private readonly records = new Map<string, DeviceBoot>();

  async record(boot: DeviceBoot): Promise<void> {
    this.records.delete(boot.deviceId);
    this.records.set(boot.deviceId, boot);
    if (this.records.size > MAX_RECORDS) this.records.delete(this.records.keys().next().value as string);
  }

  async get(deviceId: string): Promise<DeviceBoot | undefined> {
    return this.records.get(deviceId);
  }
}

/** One Redis key per device, with its time to live: what every instance reads. */
export class RedisDeviceBootRecords implements DeviceBootRecords {
  private constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  static async connect(shared: SharedRedis): Promise<RedisDeviceBootRecords> {
    const [redis] = await shared.connect(1);
    return new RedisDeviceBootRecords(redis, `${shared.keyPrefix}xiaozhi:boot:`);
  }

  async record(boot: DeviceBoot): Promise<void> {
    await this.redis.set(this.prefix + boot.deviceId, JSON.stringify(boot), 'EX', BOOT_RECORD_TTL_S);
  }

  async get(deviceId: string): Promise<DeviceBoot | undefined> {
    const stored = await this.redis.get(this.prefix + deviceId);
    return stored === null ? undefined : (JSON.parse(stored) as DeviceBoot);
  }
}
