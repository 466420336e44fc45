import { Logger } from '@nestjs/common';
import { randomUUID } from 'crypto';
import type { GatewayConfig } from '../config/gateway-config';
import { COMMAND_TIMEOUT_MS } from '../core/redis/redis-connection';
import { GatewayState } from '../core/state/gateway-state';
import type { SharedRedis } from '../core/state/shared-redis';
import { MemoryDeviceDirectory, type DeviceDirectory } from './device-directory';
import { MemoryHeldPushes, RedisHeldPushes, type HeldPushes } from './held-pushes';
import { RedisChannels } from './replicas/redis-channels';
import { LocalReplicaBus, RedisReplicaBus, type ReplicaBus } from './replicas/replica-bus';
import { RedisDeviceDirectory } from './redis-device-directory';

export const FLEET_STORES = Symbol('FLEET_STORES');

/** How long shutdown waits for writes under way (held pushes being delivered) before the stores close. */
const FINISH_WRITES_MS = 2000;

/**
 * Where the fleet keeps what instances share: the directory and owners, the way to each instance,
 * held pushes. Opened with the directory started; at shutdown it waits for the work that writes to
 * it ({@link track}), says goodbye in the directory, then closes.
 */
export class FleetStores {
  private readonly logger = new Logger('Fleet');
  private readonly writing = new Set<Promise<unknown>>();

  constructor(
    readonly directory: DeviceDirectory,
    readonly bus: ReplicaBus,
    readonly held: HeldPushes,
    private readonly closeConnections: () => Promise<void> = async () => undefined,
  ) {}

  /** Work that writes to the stores: shutdown lets it finish (within {@link FINISH_WRITES_MS}) before they close. */
  track(work: Promise<unknown>): void {
    this.writing.add(work);
    void work.finally(() => this.writing.delete(work)).catch(() => undefined);
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.race([Promise.allSettled([...this.writing]), new Promise((resolve) => setTimeout(resolve, FINISH_WRITES_MS).unref())]);
    await this.directory.stop().catch((error: Error) => this.logger.warn(`Device directory goodbye failed: ${error.message}`));
    await this.closeConnections();
  }
}

/** In Redis when instances share it (a command connection and a subscriber), in memory otherwise; the directory started. */
export async function openFleetStores(state: GatewayState, { fleet }: GatewayConfig): Promise<FleetStores> {
  const instanceId = randomUUID();
  const stores = await state.choose<Promise<FleetStores>>({
    memory: async () => new FleetStores(new MemoryDeviceDirectory(instanceId, fleet.ownershipLapseMs), new LocalReplicaBus(), new MemoryHeldPushes()),
    redis: (shared) => openRedisStores(instanceId, shared, fleet.ownershipLapseMs),
  });
  await stores.directory.start();
  return stores;
}

async function openRedisStores(instanceId: string, shared: SharedRedis, lapseMs: number): Promise<FleetStores> {
  const prefix = shared.keyPrefix;
  const [redis, subscriber] = await shared.connect(2);
  // A frozen Redis fails a push or a claim in time rather than holding it (the subscriber only listens).
  redis.options.commandTimeout = COMMAND_TIMEOUT_MS;
  const channels = new RedisChannels(subscriber);
  return new FleetStores(
    new RedisDeviceDirectory(instanceId, redis, channels, prefix, lapseMs),
    new RedisReplicaBus(instanceId, redis, channels, prefix),
    new RedisHeldPushes(redis, prefix),
    async () => {
      await channels.close();
      await redis.quit().catch(() => redis.disconnect());
    },
  );
}
