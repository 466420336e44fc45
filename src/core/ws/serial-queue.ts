import { GatewayError, GatewayErrorCode } from '../errors/gateway-error';

/** Refused because too many tasks are already waiting: the client's fault, told as an invalid message. */
export class QueueFullError extends GatewayError {
  constructor(readonly limit: number) {
    super(GatewayErrorCode.INVALID_MESSAGE, `Too many requests waiting: at most ${limit}, wait for the answers`);
    this.name = 'QueueFullError';
  }
}

const ignore = () => undefined;

/**
 * Runs one connection's tasks one at a time, in the order they came: the LLM gateway's turns
 * and session changes, UTCP per-tool calls whose answers are paired with calls by order alone.
 * At most `maxWaiting` tasks wait behind the running one; one more is refused at once.
 */
export class SerialQueue {
  private tail: Promise<unknown> = Promise.resolve();
  /** Tasks running or waiting. */
  private active = 0;
  private idleWaiters: (() => void)[] = [];

  constructor(private readonly maxWaiting = Number.POSITIVE_INFINITY) {}

  /** Tasks running or waiting. */
  get size(): number {
    return this.active;
  }

  /** No task running or waiting. */
  get idle(): boolean {
    return this.active === 0;
  }

  /**
   * Runs `task` once every task queued before it has settled, whatever their outcome; throws
   * {@link QueueFullError} (synchronously) when `maxWaiting` tasks already wait.
   */
  run<T>(task: () => T | Promise<T>): Promise<T> {
    if (this.active > this.maxWaiting) throw new QueueFullError(this.maxWaiting);
    this.active += 1;
    const result = this.tail.then(task);
    this.tail = result.then(ignore, ignore);
    void this.tail.then(() => this.settled());
    return result;
  }

  /** Resolves once no task is running or waiting (at once when idle). */
  whenIdle(): Promise<void> {
    if (this.idle) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private settled(): void {
    this.active -= 1;
    if (this.active > 0) return;
    const waiters = this.idleWaiters.splice(0);
    waiters.forEach((resolve) => resolve());
  }
}
