import { randomUUID } from 'crypto';
import { DeadlineSweep, Expiring } from '../tools/deadline-sweep';

/** How a request waits for its reply. */
export interface WaitOptions<Tag> {
  /** The request's id, as its reply will name it; a fresh UUID when absent. */
  id?: string;
  /** What the request is about (a device, a tool), for {@link PendingReplies.failWhere}. */
  tag?: Tag;
  /** The caller's: aborting it ends the wait with its reason, and the other side is told ({@link withdraw}). */
  signal?: AbortSignal;
  /** Ends the wait after this many milliseconds with {@link timeoutError}'s error; the other side is told. */
  timeoutMs?: number;
  timeoutError?: () => Error;
  /** Tells the other side the request is withdrawn (the caller gave up, or its deadline passed): it may stop, and its reply will be dropped. */
  withdraw?: (id: string, reason: unknown) => void;
}

/** One request waiting for its reply. */
class Waiter<Reply, Tag> implements Expiring {
  deadline = Number.POSITIVE_INFINITY;
  private onAbort?: () => void;

  constructor(
    readonly id: string,
    readonly tag: Tag | undefined,
    private readonly options: WaitOptions<Tag>,
    private readonly done: (waiter: Waiter<Reply, Tag>) => void,
    private readonly resolve: (reply: Reply) => void,
    private readonly reject: (error: unknown) => void,
  ) {}

  listen(signal: AbortSignal | undefined): void {
    if (!signal) return;
    this.onAbort = () => this.withdrawn(signal.reason);
    signal.addEventListener('abort', this.onAbort, { once: true });
  }

  expire(): void {
    this.withdrawn(this.options.timeoutError?.() ?? new Error(`No reply within ${this.options.timeoutMs} ms`));
  }

  succeed(reply: Reply): void {
    this.end();
    this.resolve(reply);
  }

  fail(error: unknown): void {
    this.end();
    this.reject(error);
  }

  /** The caller gave up, or the deadline passed: the other side is told, and a reply that comes later is dropped. */
  private withdrawn(reason: unknown): void {
    this.fail(reason);
    this.options.withdraw?.(this.id, reason);
  }

  private end(): void {
    if (this.onAbort) this.options.signal?.removeEventListener('abort', this.onAbort);
    this.done(this);
  }
}

/**
 * Requests sent to a peer that replies later, by id: a device's `tool_result` to a
 * `tool_callback`, another replica's reply to a fleet message, a device's JSON-RPC answer. Each
 * request waits until its reply, its caller's signal, its deadline (one shared timer for all
 * of them, {@link DeadlineSweep}), or {@link failWhere} (its peer went away); a withdrawn request
 * tells the other side, and a reply nobody waits for any more ({@link settle} answers false) is
 * the caller's to drop or refuse. Nothing is left behind: no listener, timer or entry outlives
 * its request.
 */
export class PendingReplies<Reply, Tag = undefined> {
  private readonly waiting = new Map<string, Waiter<Reply, Tag>>();
  private readonly deadlines = new DeadlineSweep<Waiter<Reply, Tag>>();

  /** Requests waiting now. */
  get size(): number {
    return this.waiting.size;
  }

  /**
   * Registers a request, then sends it (`send(id)`, so a reply that comes at once finds it); settles
   * with its reply. A `send` that throws fails the request with its error.
   */
  request(send: (id: string) => void, options: WaitOptions<Tag> = {}): Promise<Reply> {
    const id = options.id ?? randomUUID();
    if (this.waiting.has(id)) return Promise.reject(new Error(`A request "${id}" is already waiting`));
    if (options.signal?.aborted) return Promise.reject(options.signal.reason);
    return new Promise<Reply>((resolve, reject) => {
      const waiter = new Waiter<Reply, Tag>(id, options.tag, options, (done) => this.forget(done), resolve, reject);
      this.waiting.set(id, waiter);
      waiter.listen(options.signal);
      if (options.timeoutMs !== undefined) {
        waiter.deadline = performance.now() + options.timeoutMs;
        this.deadlines.add(waiter);
      }
      try {
        send(id);
      } catch (error) {
        waiter.fail(error);
      }
    });
  }

  /** Whether a request `id` still waits. */
  has(id: string): boolean {
    return this.waiting.has(id);
  }

  /** The requests waiting now, by id, with what each is about, in the order they were made. */
  *entries(): IterableIterator<[string, Tag | undefined]> {
    for (const waiter of this.waiting.values()) yield [waiter.id, waiter.tag];
  }

  /** What the request `id` is about, while it waits. */
  tagOf(id: string): Tag | undefined {
    return this.waiting.get(id)?.tag;
  }

  /** Settles the request `id` with its reply; false when none waits (a late reply, or one never asked for). */
  settle(id: string, reply: Reply): boolean {
    const waiter = this.waiting.get(id);
    waiter?.succeed(reply);
    return waiter !== undefined;
  }

  /** Fails the request `id`; false when none waits. */
  fail(id: string, error: unknown): boolean {
    const waiter = this.waiting.get(id);
    waiter?.fail(error);
    return waiter !== undefined;
  }

  /** Fails every request `match` selects (its peer went away: nobody is left to tell); how many. */
  failWhere(match: (tag: Tag | undefined, id: string) => boolean, error: (id: string) => unknown): number {
    let failed = 0;
    for (const waiter of [...this.waiting.values()]) {
      if (!match(waiter.tag, waiter.id)) continue;
      waiter.fail(error(waiter.id));
      failed += 1;
    }
    return failed;
  }

  private forget(waiter: Waiter<Reply, Tag>): void {
    this.waiting.delete(waiter.id);
    if (waiter.deadline !== Number.POSITIVE_INFINITY) this.deadlines.delete(waiter);
  }
}
