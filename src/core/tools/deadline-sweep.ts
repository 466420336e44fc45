/** Something with a deadline that must be told when it passes. */
export interface Expiring {
  /** `performance.now()` time after which {@link expire} is due. */
  readonly deadline: number;
  expire(): void;
}

/**
 * One timer for every running tool call's time limit, rather than a timer per call: the timer
 * is armed for the earliest deadline; when it fires, every call past its deadline expires and
 * the timer is armed for the next. Calls that finish are dropped from the set, so with uniform
 * time limits the timer fires about once per time limit, whatever the call rate.
 */
export class DeadlineSweep<T extends Expiring = Expiring> {
  private readonly pending = new Set<T>();
  private timer?: NodeJS.Timeout;
  private armedFor = Number.POSITIVE_INFINITY;
  private emptied?: { promise: Promise<void>; resolve: () => void };

  /** Items waiting for their deadline or their end. */
  get size(): number {
    return this.pending.size;
  }

  /** The items waiting now, as a list of its own: a caller may end them while it walks it. */
  items(): T[] {
    return [...this.pending];
  }

  /** Resolves once no item is waiting: at once when none is, else when the last one leaves. */
  whenEmpty(): Promise<void> {
    if (this.pending.size === 0) return Promise.resolve();
    if (!this.emptied) {
      let resolve!: () => void;
      const promise = new Promise<void>((done) => (resolve = done));
      this.emptied = { promise, resolve };
    }
    return this.emptied.promise;
  }

  add(item: T): void {
    this.pending.add(item);
    if (item.deadline < this.armedFor) this.arm(item.deadline);
  }

  delete(item: T): void {
    this.pending.delete(item);
    if (this.pending.size === 0) this.becameEmpty();
  }

  /** Stops the timer (the app is closing); pending items never expire. */
  stop(): void {
    this.pending.clear();
    this.becameEmpty();
  }

  private becameEmpty(): void {
    this.disarm();
    const emptied = this.emptied;
    this.emptied = undefined;
    emptied?.resolve();
  }

  private arm(deadline: number): void {
    clearTimeout(this.timer);
    this.armedFor = deadline;
    this.timer = setTimeout(() => this.sweep(), Math.max(0, deadline - performance.now()));
    this.timer.unref();
  }

  private disarm(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.armedFor = Number.POSITIVE_INFINITY;
  }

  private sweep(): void {
    this.disarm();
    const now = performance.now();
    let next = Number.POSITIVE_INFINITY;
    for (const item of this.pending) {
      if (item.deadline <= now) {
        this.pending.delete(item);
        item.expire();
      } else if (item.deadline < next) {
        next = item.deadline;
      }
    }
    if (this.pending.size === 0) this.becameEmpty();
    else if (next !== Number.POSITIVE_INFINITY) this.arm(next);
  }
}
