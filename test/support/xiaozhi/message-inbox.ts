/** A JSON message as it arrived: `atMs` on the device's clock. */
export interface ReceivedMessage {
  atMs: number;
  message: any;
}

interface Waiter {
  matches(message: any): boolean;
  resolve(message: any): void;
  reject(error: Error): void;
  timer: NodeJS.Timeout;
}

/**
 * The JSON messages a device received, in order, and a way to wait for one. Each message is
 * handed to at most one `next()` call, so a test that awaits "the next stt" after the server
 * already sent it still gets it, and two calls for the same type get two messages.
 */
export class MessageInbox {
  readonly received: ReceivedMessage[] = [];
  private readonly taken = new Set<number>();
  private readonly waiters = new Set<Waiter>();

  add(entry: ReceivedMessage): void {
    this.received.push(entry);
    const index = this.received.length - 1;
    for (const waiter of this.waiters) {
      if (!waiter.matches(entry.message)) continue;
      this.taken.add(index);
      this.settle(waiter);
      waiter.resolve(entry.message);
      return;
    }
  }

  /** The first message of `type` (and `predicate`) not handed out yet, now or when it comes within `timeoutMs`. */
  next<T = any>(type: string, predicate: (message: any) => boolean = () => true, timeoutMs = 5000): Promise<T> {
    const matches = (message: any) => message?.type === type && predicate(message);
    const index = this.received.findIndex((entry, position) => !this.taken.has(position) && matches(entry.message));
    if (index >= 0) {
      this.taken.add(index);
      return Promise.resolve(this.received[index].message as T);
    }
    return new Promise<T>((resolve, reject) => {
      const waiter: Waiter = {
        matches,
        resolve,
        reject,
        timer: setTimeout(() => {
          this.settle(waiter);
          const lately = this.received.slice(-5).map((entry) => JSON.stringify(entry.message));
          reject(new Error(`No "${type}" message within ${timeoutMs} ms; the last ones: ${lately.join(' ') || 'none'}`));
        }, timeoutMs),
      };
      this.waiters.add(waiter);
    });
  }

  /** Fails every wait still pending, with `reason`. */
  close(reason: string): void {
    for (const waiter of [...this.waiters]) {
      this.settle(waiter);
      waiter.reject(new Error(reason));
    }
  }

  private settle(waiter: Waiter): void {
    clearTimeout(waiter.timer);
    this.waiters.delete(waiter);
  }
}
