import { GatewayError, GatewayErrorCode } from '../errors/gateway-error';

/** Refused because too many tasks are already waiting: the client's fault, told as an invalid message. */
export class QueueFullError extends GatewayError {
  constructor(readonly limit: number) {
    super(GatewayErrorCode.INVALID_MESSAGE, `Too many requests waiting: at most ${limit}, wait for the answers`);
    this.name = 'QueueFullError';
  }
}

const ignore = () => undefined;

/** A task in a {@link SerialQueue}: its outcome, and a way to take it back before it starts. */
export interface QueuedTask<T> {
  /** Settles with the task's outcome, or `undefined` if it was withdrawn. */
  readonly done: Promise<T | undefined>;
  /** Takes the task back if it has not started; returns whether it had not. */
  withdraw(): boolean;
}

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
  private roomWaiters: (() => void)[] = [];

  constructor(
    private readonly maxWaiting = Number.POSITIVE_INFINITY,
    /** Hears the queue grow and shrink (a connection that stops reading while too many wait). */
    private readonly watcher?: { added(): void; settled(): void },
  ) {}

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
    return this.schedule(task).done as Promise<T>;
  }

  /**
   * {@link run}, for a task that may be taken back while it waits: a withdrawn task never runs
   * (`done` resolves `undefined`) and frees its place at once, so a client that cancels what it
   * queued is not refused for waiting requests it no longer wants.
   */
  schedule<T>(task: () => T | Promise<T>): QueuedTask<T> {
    if (this.active > this.maxWaiting) throw new QueueFullError(this.maxWaiting);
    this.active += 1;
    this.watcher?.added();
    let state: 'waiting' | 'running' | 'withdrawn' = 'waiting';
    const done = this.tail.then(() => {
      if (state === 'withdrawn') return undefined;
      state = 'running';
      return task();
    });
    this.tail = done.then(ignore, ignore);
    void this.tail.then(() => state !== 'withdrawn' && this.settled());
    return {
      done,
      withdraw: () => {
        if (state !== 'waiting') return false;
        state = 'withdrawn';
        this.settled();
        return true;
      },
    };
  }

  /** Resolves once no task is running or waiting (at once when idle). */
  whenIdle(): Promise<void> {
    if (this.idle) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /**
   * Resolves once one more task would be taken (at once when it would): for work that must not be
   * refused, only delayed, such as pushes held for a device while it was away.
   */
  whenRoom(): Promise<void> {
    if (this.active <= this.maxWaiting) return Promise.resolve();
    return new Promise((resolve) => this.roomWaiters.push(resolve));
  }

  private settled(): void {
    this.active -= 1;
    this.watcher?.settled();
    if (this.active <= this.maxWaiting) this.roomWaiters.splice(0).forEach((resolve) => resolve());
    if (this.active > 0) return;
    const waiters = this.idleWaiters.splice(0);
    waiters.forEach((resolve) => resolve());
  }
}
