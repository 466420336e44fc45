/**
 * One request to a speech server: its own abort signal, ended by the caller's signal, by its
 * deadline, or by {@link end}. The deadline runs only while {@link arm}ed, so a synthesis can
 * time the server's silences and not the time its listener takes to play what it already has.
 */
export class EngineRequest {
  private readonly controller = new AbortController();
  private timer?: NodeJS.Timeout;
  private expired = false;
  private readonly stop = () => this.controller.abort(this.caller?.reason);

  constructor(
    private readonly caller: AbortSignal | undefined,
    private readonly timeoutMs: number,
  ) {
    if (caller?.aborted) this.stop();
    caller?.addEventListener('abort', this.stop, { once: true });
  }

  /** What the request is sent with. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Whether the deadline ended it. */
  get timedOut(): boolean {
    return this.expired;
  }

  /** Whether the caller ended it. */
  get cancelled(): boolean {
    return this.caller?.aborted === true;
  }

  /** Starts the deadline, unless it runs already. */
  arm(): void {
    this.timer ??= setTimeout(() => {
      this.expired = true;
      this.controller.abort(new Error(`No answer within ${this.timeoutMs} ms`));
    }, this.timeoutMs);
  }

  /** Stops the deadline. */
  disarm(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** Ends the request (its connection closes if it is still open) and lets go of the caller's signal. */
  end(): void {
    this.disarm();
    this.caller?.removeEventListener('abort', this.stop);
    if (!this.controller.signal.aborted) this.controller.abort(new Error('The speech request is over'));
  }
}
