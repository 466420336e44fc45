import { GatewayError, GatewayErrorCode } from '../errors/gateway-error';
import { isPromise, MaybePromise } from '../maybe-promise';

/**
 * A call refused because its connection already has as many calls running as it may. Answered
 * like a rate limit (`RATE_LIMITED`, JSON-RPC -32029), without a wait: one ending frees a place.
 */
export class TooManyCallsError extends GatewayError {
  constructor(limit: number) {
    super(
      GatewayErrorCode.RATE_LIMITED,
      `Too many calls in flight on this connection: at most ${limit} (WS_MAX_CALLS_IN_FLIGHT); wait for an answer before the next call`,
    );
    this.name = 'TooManyCallsError';
  }
}

/**
 * The tool calls one connection has running at once, at most `limit`, so one socket cannot start
 * thousands of slow calls (and their timers and upstream requests). A call that answers at once
 * takes its place and gives it back in the same tick.
 */
export class CallsInFlight {
  private running = 0;
  /** Made at the first call that does not answer at once (most connections of a fleet make none), then kept: one closure, not one per call. */
  private releaser?: () => void;

  constructor(readonly limit: number) {}

  get count(): number {
    return this.running;
  }

  /** `call`, holding a place until it settles; throws {@link TooManyCallsError} when none is free. */
  run<T>(call: () => MaybePromise<T>): MaybePromise<T> {
    if (this.running >= this.limit) throw new TooManyCallsError(this.limit);
    this.running += 1;
    let result: MaybePromise<T>;
    try {
      result = call();
    } catch (error) {
      this.running -= 1;
      throw error;
    }
    if (!isPromise(result)) {
      this.running -= 1;
      return result;
    }
    // The caller keeps the call's own promise; releasing beside it costs less than a `finally` chain.
    const release = (this.releaser ??= () => {
      this.running -= 1;
    });
    result.then(release, release);
    return result;
  }
}
