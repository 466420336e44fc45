export interface HeartbeatOptions {
  intervalMs: number;
  /** How long without a sign of life ends the connection. */
  timeoutMs: number;
  ping(): void;
  onTimeout(): void;
}

/**
 * The spec's heartbeat (section 3.4): a ping every `intervalMs`, and `onTimeout` once nothing
 * has proved the peer alive ({@link alive}) for `timeoutMs`. Stops itself on timeout; the
 * owner stops it when the connection ends, so no timer outlives its connection.
 */
export class Heartbeat {
  private readonly pinger: NodeJS.Timeout;
  private readonly deadline: NodeJS.Timeout;
  private stopped = false;

  constructor(options: HeartbeatOptions) {
    this.pinger = setInterval(options.ping, options.intervalMs);
    this.deadline = setTimeout(() => {
      this.stop();
      options.onTimeout();
    }, options.timeoutMs);
  }

  /** A pong arrived: the timeout starts over. */
  alive(): void {
    if (!this.stopped) this.deadline.refresh();
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.pinger);
    clearTimeout(this.deadline);
  }
}
