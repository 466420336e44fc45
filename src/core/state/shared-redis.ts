import type Redis from 'ioredis';
import { connectRedis } from '../redis/redis-connection';

/**
 * The Redis that instances share, as the state module hands it out: its key prefix, and new
 * connections to it (ready, or `RedisUnavailableError`), each told to the state module so none
 * outlives the app. Its URL is there only for BullMQ, which opens its own.
 */
export interface SharedRedis {
  readonly url: string;
  readonly keyPrefix: string;
  /** `count` new connections, `prepare` run on each before it connects (to define scripts). */
  connect(count: number, prepare?: (client: Redis) => void): Promise<Redis[]>;
}

/** A {@link SharedRedis} on `url`, remembering every connection it made so that {@link closeAll} can end what its owners left open. */
export class RedisConnections implements SharedRedis {
  private readonly made = new Set<Redis>();

  constructor(
    readonly url: string,
    readonly keyPrefix: string,
  ) {}

  async connect(count: number, prepare?: (client: Redis) => void): Promise<Redis[]> {
    const clients = await connectRedis(this.url, count, prepare);
    for (const client of clients) {
      this.made.add(client);
      client.once('end', () => this.made.delete(client));
    }
    return clients;
  }

  /** Ends every connection still open (their owners close theirs first, at their own shutdown). */
  closeAll(): void {
    for (const client of this.made) client.disconnect();
    this.made.clear();
  }
}
