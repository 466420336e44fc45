export interface HeartbeatOptions {
  /** How often to ping. */
  intervalMs: number;
  /** How long without a sign of life ends the connection. */
  timeoutMs: number;
  ping(): void;
  onTimeout(): void;
}

/**
 * Keep-alive for one connection: a ping every `intervalMs`, and `onTimeout` once nothing has
 * proved the peer alive ({@link alive}) for `timeoutMs`. `alive()` only notes the time, since
 * it runs for every frame; the deadline timer checks that note when it fires and re-arms for
 * what is left. Stops itself on timeout; the connection stops it when it closes, so no timer
 * outlives its connection.
 */
export class Heartbeat {
  private readonly pinger: NodeJS.Timeout;
  private deadline: NodeJS.Timeout;
  private lastSeen = Date.now();
  private stopped = false;

  constructor(private readonly options: HeartbeatOptions) {
    this.pinger = setInterval(options.ping, options.intervalMs);
    this.pinger.unref();
    this.deadline = this.arm(options.timeoutMs);
  }

  /** A pong or a frame arrived: the timeout starts over. */
  alive(): void {
    this.lastSeen = Date.now();
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.pinger);
    clearTimeout(this.deadline);
  }

  private arm(delayMs: number): NodeJS.Timeout {
    const timer = setTimeout(() => this.check(), delayMs);
    timer.unref();
    return timer;
  }

  private check(): void {
    if (this.stopped) return;
    const left = this.lastSeen + this.options.timeoutMs - Date.now();
    if (left > 0) {
      this.deadline = this.arm(left);
      return;
    }
    this.stop();
    this.options.onTimeout();
  }
}
