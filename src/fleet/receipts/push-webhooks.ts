import { Logger } from '@nestjs/common';
import { setTimeout as sleep } from 'timers/promises';

/** Where and how receipts' changes are posted. */
export interface WebhookSettings {
  url: string;
  /** One attempt's longest wait for an answer. */
  timeoutMs: number;
  /** Attempts after the first when one fails (a network error, a timeout, a status other than 2xx). */
  retries: number;
  /** The first retry's wait; each next one doubles it. */
  backoffMs: number;
  /** Changes waiting to be posted at most; one more is dropped and counted. */
  queueMax: number;
  /** Posts in flight at once. */
  concurrency: number;
}

/** What the hook was asked to carry and what became of it, since start. */
export interface WebhookCounters {
  delivered: number;
  /** Given up after every retry. */
  failed: number;
  /** Not queued: the queue was full. */
  dropped: number;
}

/**
 * Posts each change of a receipt to the operator's webhook (`PUSH_WEBHOOK_URL`) as JSON, from the
 * instance where the change happened, in an in-process bounded queue: a push never waits for the
 * hook (enqueueing is synchronous and never throws), a hook that hangs costs at most its timeout
 * per attempt, a failing one a bounded number of retries with a doubling backoff, and beyond
 * {@link WebhookSettings.queueMax} changes waiting, new ones are dropped and counted. Changes of
 * one push may arrive out of order when one is retried: each carries its state's time (`at`) and
 * the receipt's whole history. Closed with the app: what is still queued is dropped.
 */
export class PushWebhooks {
  private readonly logger = new Logger('Fleet');
  private readonly queue: unknown[] = [];
  private running = 0;
  private readonly stop = new AbortController();
  readonly counters: WebhookCounters = { delivered: 0, failed: 0, dropped: 0 };

  constructor(
    private readonly settings: WebhookSettings,
    private readonly post: typeof fetch = fetch,
  ) {}

  /** Queues `body` to be posted; false when it was dropped (the queue is full, or closed). */
  enqueue(body: unknown): boolean {
    if (this.stop.signal.aborted || this.queue.length >= this.settings.queueMax) {
      this.counters.dropped += 1;
      if (this.counters.dropped === 1 || this.counters.dropped % 1000 === 0)
        this.logger.warn(`Push webhook queue full (PUSH_WEBHOOK_QUEUE_MAX ${this.settings.queueMax}): ${this.counters.dropped} changes dropped so far`);
      return false;
    }
    this.queue.push(body);
    this.pump();
    return true;
  }

  /** Changes waiting, not counting those being posted. */
  get waiting(): number {
    return this.queue.length;
  }

  close(): void {
    this.stop.abort();
    this.queue.length = 0;
  }

  private pump(): void {
    while (this.running < this.settings.concurrency && this.queue.length > 0) {
      const body = this.queue.shift();
      this.running += 1;
      void this.deliver(body).finally(() => {
        this.running -= 1;
        this.pump();
      });
    }
  }

  private async deliver(body: unknown): Promise<void> {
    const serialized = JSON.stringify(body);
    let why = '';
    for (let attempt = 0; attempt <= this.settings.retries && !this.stop.signal.aborted; attempt++) {
      if (attempt > 0) {
        try {
          await sleep(this.settings.backoffMs * 2 ** (attempt - 1), undefined, { signal: this.stop.signal });
        } catch {
          return;
        }
      }
      try {
        const answer = await this.post(this.settings.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: serialized,
          redirect: 'manual',
          signal: AbortSignal.any([this.stop.signal, AbortSignal.timeout(this.settings.timeoutMs)]),
        });
        await answer.body?.cancel().catch(() => undefined);
        if (answer.ok) {
          this.counters.delivered += 1;
          return;
        }
        why = `answered ${answer.status}`;
      } catch (error) {
        why = (error as Error).name === 'TimeoutError' ? `no answer within ${this.settings.timeoutMs} ms` : (error as Error).message;
      }
    }
    if (this.stop.signal.aborted) return;
    this.counters.failed += 1;
    this.logger.warn(`Push webhook gave up on a change after ${this.settings.retries + 1} attempts: ${why}`);
  }
}
