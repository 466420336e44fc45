import type Redis from 'ioredis';
import type { RedisChannels } from './redis-channels';

/**
 * What instances tell each other about devices: a call of a device's tool, a push, their answers.
 * One `say` names every device of a fan-out that the receiving instance holds; its reply's
 * `value` lists those it could not reach ({@link SayFailures}).
 */
export type FleetMessage =
  | { kind: 'call'; id: string; from: string; device: string; tool: string; args: Record<string, unknown>; timeoutMs: number; principal?: string }
  | { kind: 'cancel'; id: string; device: string }
  | { kind: 'say'; id: string; from: string; devices: { device: string; turnId: string }[]; text: string; interrupt?: boolean; reminderId?: string }
  | { kind: 'turn'; id: string; from: string; device: string; text: string }
  | { kind: 'replace'; device: string; connectionId: string }
  | { kind: 'reply'; id: string; ok: boolean; value?: unknown; code?: string; message?: string };

/** The devices of a `say` that the receiving instance could not reach, with why. */
export type SayFailures = { device: string; code: string; message: string }[];

/**
 * How a message reaches the instance that holds a device's socket. Across replicas, each
 * instance listens on an inbox channel of its own in Redis; on one instance there is nobody else
 * to tell.
 */
export interface FleetBus {
  /** Delivers `message` to `instance`; resolves false when nobody listens there (the instance is gone). */
  send(instance: string, message: FleetMessage): Promise<boolean>;
  /** Hears the messages sent to this instance. */
  listen(handler: (message: FleetMessage) => void): Promise<void>;
}

export class LocalFleetBus implements FleetBus {
  async send(): Promise<boolean> {
    return false;
  }

  async listen(): Promise<void> {}
}

export class RedisFleetBus implements FleetBus {
  constructor(
    private readonly instanceId: string,
    private readonly redis: Redis,
    private readonly channels: RedisChannels,
    private readonly prefix: string,
  ) {}

  async send(instance: string, message: FleetMessage): Promise<boolean> {
    return (await this.redis.publish(this.inbox(instance), JSON.stringify(message))) > 0;
  }

  listen(handler: (message: FleetMessage) => void): Promise<void> {
    return this.channels.listen(this.inbox(this.instanceId), (message) => handler(JSON.parse(message) as FleetMessage));
  }

  private inbox(instance: string): string {
    return `${this.prefix}fleet:inbox:${instance}`;
  }
}
