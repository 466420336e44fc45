import type Redis from 'ioredis';
import type { RedisChannels } from './redis-channels';

/**
 * What instances tell each other about devices: a call of a device's tool, a push, their answers.
 * One `say` names every device of a fan-out that the receiving instance holds; its reply's
 * `value` reports those it did not speak to at once ({@link SayReports}). A push carries who asked
 * and its `holdS`, so the instance holding the device can hold it again if the device leaves
 * before its turn comes. `drain` tells the instance holding a device that a push was just held
 * for it (it connected meanwhile).
 */
export type FleetMessage =
  | { kind: 'call'; id: string; from: string; device: string; tool: string; args: Record<string, unknown>; timeoutMs: number; principal?: string }
  | { kind: 'cancel'; id: string; device: string }
  | ({ kind: 'say'; id: string; from: string; devices: { device: string; turnId: string }[] } & RemotePush)
  | ({ kind: 'turn'; id: string; from: string; device: string } & Pick<RemotePush, 'text' | 'holdS' | 'principal'>)
  | { kind: 'replace'; device: string; connectionId: string }
  | { kind: 'drain'; device: string }
  | { kind: 'reply'; id: string; ok: boolean; value?: unknown; code?: string; message?: string };

/** A push as it travels to the instance holding its devices. */
interface RemotePush {
  text: string;
  interrupt?: boolean;
  reminderId?: string;
  holdS?: number;
  /** Who asked (absent: the gateway itself). */
  principal?: string;
}

/** A device a push did not reach at once: waiting behind its turn in flight (`queued`), or not reached, with why. */
export type SayReport = { device: string; queued: true } | { device: string; code: string; message: string };

/** The devices of a `say` the receiving instance did not speak to at once. */
export type SayReports = SayReport[];

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
