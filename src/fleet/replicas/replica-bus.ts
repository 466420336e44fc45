import type Redis from 'ioredis';
import type { RedisChannels } from './redis-channels';

/**
 * What instances tell each other, whatever it is about: a request that wants a reply, its reply,
 * the withdrawal of a request its caller gave up, and a notice that wants none. What each
 * `type` carries is the business of whoever handles it ({@link ReplicaMessaging.handle}).
 */
export type ReplicaMessage =
  | { kind: 'request'; type: string; id: string; from: string; body: unknown }
  | { kind: 'reply'; id: string; ok: boolean; value?: unknown; code?: string; message?: string }
  | { kind: 'withdraw'; id: string }
  | { kind: 'notice'; type: string; body: unknown; from?: string };

/**
 * How a message reaches another instance. Across replicas, each instance listens on an inbox
 * channel of its own in Redis; on one instance there is nobody else to tell.
 */
export interface ReplicaBus {
  /** Delivers `message` to `instance`; resolves false when nobody listens there (the instance is gone). */
  send(instance: string, message: ReplicaMessage): Promise<boolean>;
  /** Delivers `message` to every other instance (and to this one, which skips what it sent itself). */
  broadcast(message: ReplicaMessage): Promise<void>;
  /** Hears the messages sent to this instance, and those sent to every instance. */
  listen(handler: (message: ReplicaMessage) => void): Promise<void>;
}

export class LocalReplicaBus implements ReplicaBus {
  async send(): Promise<boolean> {
    return false;
  }

  async broadcast(): Promise<void> {}

  async listen(): Promise<void> {}
}

export class RedisReplicaBus implements ReplicaBus {
  constructor(
    private readonly instanceId: string,
    private readonly redis: Redis,
    private readonly channels: RedisChannels,
    private readonly prefix: string,
  ) {}

  async send(instance: string, message: ReplicaMessage): Promise<boolean> {
    return (await this.redis.publish(this.inbox(instance), JSON.stringify(message))) > 0;
  }

  async broadcast(message: ReplicaMessage): Promise<void> {
    await this.redis.publish(this.everyone(), JSON.stringify(message));
  }

  async listen(handler: (message: ReplicaMessage) => void): Promise<void> {
    const hear = (message: string) => handler(JSON.parse(message) as ReplicaMessage);
    await this.channels.listen(this.inbox(this.instanceId), hear);
    await this.channels.listen(this.everyone(), hear);
  }

  private everyone(): string {
    return `${this.prefix}fleet:everyone`;
  }

  private inbox(instance: string): string {
    return `${this.prefix}fleet:inbox:${instance}`;
  }
}
