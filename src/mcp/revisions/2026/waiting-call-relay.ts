import { randomBytes, randomUUID } from 'crypto';
import type Redis from 'ioredis';

import { PendingReplies } from '../../../core/requests/pending-replies';
import type { SharedRedis } from '../../../core/state/shared-redis';

/** A client's retry of a call that waits in another instance, as that instance is told it. */
export interface ForwardedRetry {
  call: string;
  /** The round of the call that issued the retry's `requestState`: only the latest round's may retry. */
  round: number;
  /** The request's method (`tools/call`, `prompts/get`, `resources/read`), to which the next `requestState` is bound. */
  method: string;
  principal: string;
  /** The tool, prompt or resource URI the request names. */
  target: string;
  responses?: Record<string, unknown>;
  capabilities: Record<string, unknown>;
}

/** How one round of a waiting call ended, in words every instance reads. */
export type RoundOutcome = { result: Record<string, unknown> } | { error: { code: number; message: string; data?: unknown } };

type RelayMessage =
  | { kind: 'retry'; id: string; from: string; retry: ForwardedRetry }
  | { kind: 'withdraw'; id: string; from: string }
  | { kind: 'outcome'; id: string; outcome: RoundOutcome };

/** How a forwarded round ends for a client that went away before it did. */
const CLIENT_WENT_AWAY: RoundOutcome = { error: { code: -32000, message: 'The client went away' } };

/**
 * How a 2026 client's retry reaches the instance its call waits in, wherever the load balancer sent
 * it: a call waiting for input cannot move (its upstream request is in flight there), so the retry
 * goes to it. With `REDIS_URL` each instance listens on an inbox channel of its own, and the key
 * that seals `requestState` is one for all of them (kept in Redis), so any instance can read which
 * instance a state belongs to; alone, an instance has its own key and nobody to forward to.
 */
export interface WaitingCallRelay {
  readonly instance: string;
  /** The key `requestState` is sealed with. */
  readonly key: Uint8Array | string;
  /**
   * Sends `retry` to `instance` and resolves with its round's outcome; `undefined` when nobody
   * listens there (the instance is gone). `signal` is the retry's client: when it goes away, the
   * instance is told, and ends the round as if that client had gone away there.
   */
  forward(instance: string, retry: ForwardedRetry, signal: AbortSignal): Promise<RoundOutcome | undefined>;
  /** Answers the retries forwarded to this instance with `serve`; its signal aborts when the retry's client goes away. */
  listen(serve: (retry: ForwardedRetry, signal: AbortSignal) => Promise<RoundOutcome>): Promise<void>;
  close(): Promise<void>;
}

export class LocalWaitingCallRelay implements WaitingCallRelay {
  readonly instance = randomUUID();
  readonly key = randomBytes(32);

  async forward(): Promise<undefined> {
    return undefined;
  }

  async listen(): Promise<void> {}

  async close(): Promise<void> {}
}

export class RedisWaitingCallRelay implements WaitingCallRelay {
  readonly instance = randomUUID();
  /** Retries forwarded from here, waiting for their rounds' outcomes. */
  private readonly forwarded = new PendingReplies<RoundOutcome | undefined>();
  /** Rounds served here for other instances' clients, by sender and id: their stops. */
  private readonly serving = new Map<string, AbortController>();
  private serve?: (retry: ForwardedRetry, signal: AbortSignal) => Promise<RoundOutcome>;

  private constructor(
    private readonly redis: Redis,
    private readonly subscriber: Redis,
    private readonly prefix: string,
    readonly key: string,
  ) {
    subscriber.on('message', (_channel: string, text: string) => this.hear(JSON.parse(text) as RelayMessage));
  }

  /** Connects, and takes the instances' shared key (the first instance to start makes it). */
  static async connect(shared: SharedRedis): Promise<RedisWaitingCallRelay> {
    const prefix = shared.keyPrefix;
    const [redis, subscriber] = await shared.connect(2);
    const name = `${prefix}mcp:request-state-key`;
    await redis.set(name, randomBytes(32).toString('base64'), 'NX');
    const key = (await redis.get(name))!;
    const relay = new RedisWaitingCallRelay(redis, subscriber, prefix, key);
    await subscriber.subscribe(relay.inbox(relay.instance));
    return relay;
  }

  /** The round may last as long as the call: until it ends or asks again, or this retry's client leaves. */
  async forward(instance: string, retry: ForwardedRetry, signal: AbortSignal): Promise<RoundOutcome | undefined> {
    const from = this.instance;
    try {
      return await this.forwarded.request(
        (id) =>
          this.publish(instance, { kind: 'retry', id, from, retry }).then(
            (listeners) => listeners === 0 && this.forwarded.settle(id, undefined),
            (error: unknown) => this.forwarded.fail(id, error),
          ),
        { signal, withdraw: (id) => void this.publish(instance, { kind: 'withdraw', id, from }).catch(() => undefined) },
      );
    } catch (error) {
      if (signal.aborted) return CLIENT_WENT_AWAY;
      throw error;
    }
  }

  async listen(serve: (retry: ForwardedRetry, signal: AbortSignal) => Promise<RoundOutcome>): Promise<void> {
    this.serve = serve;
  }

  async close(): Promise<void> {
    this.forwarded.failWhere(
      () => true,
      () => new Error('The gateway is shutting down'),
    );
    await Promise.all([this.subscriber, this.redis].map((client) => client.quit().catch(() => client.disconnect())));
  }

  private hear(message: RelayMessage): void {
    if (message.kind === 'outcome') {
      this.forwarded.settle(message.id, message.outcome);
      return;
    }
    const round = `${message.from}\0${message.id}`;
    if (message.kind === 'withdraw') {
      this.serving.get(round)?.abort();
      return;
    }
    const serve = this.serve;
    if (!serve) return;
    const stop = new AbortController();
    this.serving.set(round, stop);
    void serve(message.retry, stop.signal)
      .then((outcome) => this.publish(message.from, { kind: 'outcome', id: message.id, outcome }))
      .catch(() => undefined)
      .finally(() => this.serving.delete(round));
  }

  private publish(instance: string, message: RelayMessage): Promise<number> {
    return this.redis.publish(this.inbox(instance), JSON.stringify(message));
  }

  private inbox(instance: string): string {
    return `${this.prefix}mcp:waiting-calls:${instance}`;
  }
}
