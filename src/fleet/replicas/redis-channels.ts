import type Redis from 'ioredis';

/**
 * One subscriber connection shared by the fleet's channels (the directory's changes, this
 * instance's inbox): each channel has one handler, and `onResubscribed` hears the connection
 * come back after a loss, when messages may have been missed.
 */
export class RedisChannels {
  private readonly handlers = new Map<string, (message: string) => void>();
  private resubscribed: (() => void)[] = [];
  private connectedOnce = false;

  constructor(private readonly subscriber: Redis) {
    subscriber.on('message', (channel: string, message: string) => this.handlers.get(channel)?.(message));
    subscriber.on('ready', () => {
      if (this.connectedOnce) this.resubscribed.forEach((hear) => hear());
      this.connectedOnce = true;
    });
  }

  async listen(channel: string, handler: (message: string) => void): Promise<void> {
    this.handlers.set(channel, handler);
    this.connectedOnce = true;
    await this.subscriber.subscribe(channel);
  }

  onResubscribed(hear: () => void): void {
    this.resubscribed.push(hear);
  }

  async close(): Promise<void> {
    this.handlers.clear();
    this.resubscribed = [];
    await this.subscriber.quit().catch(() => this.subscriber.disconnect());
  }
}
