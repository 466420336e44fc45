import { Logger, OnApplicationShutdown } from '@nestjs/common';
import { randomUUID } from 'crypto';
import type Redis from 'ioredis';
import { COMMAND_TIMEOUT_MS } from '../../core/redis/redis-connection';
import type { SharedRedis } from '../../core/state/shared-redis';
import type { SessionPresence } from './session-presence';

/**
 * Session take-over announcements between the instances sharing a Redis: each announcement is
 * published on `<prefix>session-attached` with this instance's id, and every other instance
 * hears it on its own subscriber connection (Redis wants one for subscriptions).
 */
export class RedisSessionPresence implements SessionPresence, OnApplicationShutdown {
  private readonly logger = new Logger('RedisSessions');
  private readonly instanceId = randomUUID();
  private readonly listeners: ((sessionId: string) => void)[] = [];

  private constructor(
    private readonly publisher: Redis,
    private readonly subscriber: Redis,
    private readonly channel: string,
  ) {}

  static async connect(shared: SharedRedis): Promise<RedisSessionPresence> {
    const [publisher, subscriber] = await shared.connect(2);
    publisher.options.commandTimeout = COMMAND_TIMEOUT_MS;
    const presence = new RedisSessionPresence(publisher, subscriber, `${shared.keyPrefix}session-attached`);
    await presence.listen();
    return presence;
  }

  async announceAttach(sessionId: string): Promise<void> {
    await this.publisher.publish(this.channel, JSON.stringify({ sessionId, instanceId: this.instanceId }));
  }

  onAttachedElsewhere(listener: (sessionId: string) => void): void {
    this.listeners.push(listener);
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.allSettled([this.publisher.quit(), this.subscriber.quit()]);
  }

  private async listen(): Promise<void> {
    this.subscriber.on('message', (_channel: string, text: string) => {
      try {
        const { sessionId, instanceId } = JSON.parse(text) as { sessionId: string; instanceId: string };
        if (instanceId !== this.instanceId) this.listeners.forEach((listener) => listener(sessionId));
      } catch {
        this.logger.warn(`Ignored a malformed announcement on ${this.channel}`);
      }
    });
    await this.subscriber.subscribe(this.channel);
  }
}
