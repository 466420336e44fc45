import { randomUUID } from 'crypto';
import type { GatewayConfig } from '../config/gateway-config';
import { COMMAND_TIMEOUT_MS, connectRedis } from '../core/redis/redis-connection';
import { MemoryDeviceDirectory, type DeviceDirectory } from './device-directory';
import { LocalFleetBus, RedisFleetBus, type FleetBus } from './fleet-bus';
import { MemoryHeldPushes, RedisHeldPushes, type HeldPushes } from './held-pushes';
import { RedisChannels } from './redis-channels';
import { RedisDeviceDirectory } from './redis-device-directory';

export const FLEET_STORES = Symbol('FLEET_STORES');

/** Where the fleet keeps what instances share: the directory and owners, the way to each instance, held pushes. */
export interface FleetStores {
  directory: DeviceDirectory;
  bus: FleetBus;
  held: HeldPushes;
  close(): Promise<void>;
}

/** In Redis with `REDIS_URL` (a command connection and a subscriber), in memory otherwise. */
export async function openFleetStores({ session, fleet }: GatewayConfig): Promise<FleetStores> {
  const instanceId = randomUUID();
  if (!session.redisUrl) {
    return {
      directory: new MemoryDeviceDirectory(instanceId, fleet.ownershipLapseMs),
      bus: new LocalFleetBus(),
      held: new MemoryHeldPushes(),
      close: async () => undefined,
    };
  }
  const prefix = session.redisKeyPrefix;
  const [redis, subscriber] = await connectRedis(session.redisUrl, 2);
  // A frozen Redis fails a push or a claim in time rather than holding it (the subscriber only listens).
  redis.options.commandTimeout = COMMAND_TIMEOUT_MS;
  const channels = new RedisChannels(subscriber);
  return {
    directory: new RedisDeviceDirectory(instanceId, redis, channels, prefix, fleet.ownershipLapseMs),
    bus: new RedisFleetBus(instanceId, redis, channels, prefix),
    held: new RedisHeldPushes(redis, prefix),
    close: async () => {
      await channels.close();
      await redis.quit().catch(() => redis.disconnect());
    },
  };
}
