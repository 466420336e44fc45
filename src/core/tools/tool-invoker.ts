import type { Logger } from '@nestjs/common';
import { GatewayError, GatewayErrorCode } from '../errors/gateway-error';
import { isPromise, MaybePromise, thenMaybe } from '../maybe-promise';
import { FRAME_MAX_DEPTH, withinDepth } from '../validation/frame-schema';
import { DeadlineSweep, Expiring } from './deadline-sweep';
import type { ArgumentsValidator } from './json-schema';
import { textOfContent, ToolContentResult } from './tool-content';
import type { ToolAudience, ToolCallContext, ToolCaller, ToolDefinition, ToolFailure, ToolFailureCode, ToolOutcome, ToolSuccess } from './tool-definition';
import { ToolError } from './tool-error';

/** A catalogue entry: the tool and its compiled input schema. */
export interface CatalogueEntry {
  tool: ToolDefinition;
  validate: ArgumentsValidator;
}

/** What the caller of a tool call may tell about it. */
export type ToolCallOptions = Partial<ToolCallContext>;

/** Who makes a call and by what way: what the handler, the metrics, the audit log and traces learn of it. */
export interface InvokeOptions extends ToolCallOptions {
  /** The protocol the call came by (`llm`, `mcp`...), for the metrics, the audit log and traces. */
  protocol?: string;
}

/**
 * What one caller attaches to one call, apart from who it is (so a caller's
 * {@link InvokeOptions} can serve every call it makes, unchanged).
 */
export interface ToolCallControls {
  /** The client that made the call, as the handler's context shows it. */
  caller?: ToolCaller;
  /** Each partial result of a streaming tool, as it comes; never called after the outcome. */
  onPartial?: (value: unknown) => void;
  /**
   * Filled in while the call runs (it did not answer at once): stops it, for a caller whose
   * stop is not a signal (an MCP `notifications/cancelled` for one request of a connection).
   */
  cancel?: () => void;
}

/**
 * A call looked up and its arguments checked, ready to run: what a caller that must decide
 * something before running it (the LLM gateway, sending device calls out) holds, so the
 * arguments are validated once per call.
 */
export interface PreparedToolCall {
  readonly name: string;
  readonly entry?: CatalogueEntry;
  readonly args: unknown;
  /** Why the call cannot run (unknown tool, bad arguments); it then ends in this failure. */
  readonly problem?: { code: ToolFailureCode; message: string };
}

/**
 * Hears every finished call (the metrics): the tool, when the catalogue knows it; `ran` when its
 * handler was reached (not for an unknown tool or invalid arguments).
 */
export type ToolCallObserver = (tool: ToolDefinition | undefined, protocol: string | undefined, outcome: ToolOutcome, ran: boolean) => void;

/** One call as a watcher follows it, from just before its handler runs to its outcome. */
export interface ToolCallWatch {
  /** Runs the call inside the watch (a trace span's context, so the handler's own calls are its children). */
  within?<T>(run: () => T): T;
  ended(outcome: ToolOutcome): void;
}

/**
 * Follows every call of every protocol from its start (the audit log and traces hook in here);
 * `undefined` from {@link started} means it does not follow this call.
 */
export interface ToolCallWatcher {
  started(call: PreparedToolCall, options: InvokeOptions): ToolCallWatch | undefined;
}

class ToolTimeoutSignal extends Error {}

const TOOL_FAILURE_CODES = new Set<string>(['TOOL_NOT_FOUND', 'INVALID_TOOL_PARAMETERS', 'TOOL_EXECUTION_FAILED', 'TOOL_TIMEOUT', 'TOOL_UNAVAILABLE']);

function isAsyncIterable(value: unknown): value is AsyncIterable<unknown> {
  return (
    value !== null &&
    (typeof value === 'object' || typeof value === 'function') &&
    typeof (value as Partial<AsyncIterable<unknown>>)[Symbol.asyncIterator] === 'function'
  );
}

function failure(code: ToolFailureCode, message: string, started: number, details?: unknown): ToolFailure {
  const outcome: ToolFailure = { ok: false, code, message, durationMs: performance.now() - started };
  if (details !== undefined) outcome.details = details;
  return outcome;
}

/** A handler's return value as a success; a {@link ToolContentResult} is unwrapped into its blocks and value. */
function success(returned: unknown, started: number): ToolSuccess {
  const durationMs = performance.now() - started;
  if (!(returned instanceof ToolContentResult)) return { ok: true, value: returned, durationMs };
  const { content, structuredContent } = returned;
  return { ok: true, value: structuredContent ?? textOfContent(content), content, durationMs };
}

/** Checks `args` against the entry's schema: a JSON object of bounded depth, then the schema's rules. */
function checkArguments(entry: CatalogueEntry, args: unknown): string | undefined {
  if (args === null || typeof args !== 'object' || Array.isArray(args)) return 'arguments must be a JSON object';
  if (!withinDepth(args, FRAME_MAX_DEPTH)) return `arguments nest deeper than ${FRAME_MAX_DEPTH} levels`;
  return entry.validate(args);
}

/**
 * Runs catalogue tools. A call always ends in a {@link ToolOutcome}, never an exception, within
 * the tool's time limit. What a call costs depends on what it needs:
 * - a handler that answers synchronously is called and its value returned at once: no promise,
 *   no timer, no abort controller;
 * - a handler that returns a promise or streams is watched by the one shared
 *   {@link DeadlineSweep} for its time limit, and by the caller's signal or cancellation;
 * - the `signal` of a handler's context (an `AbortController`) is made only if the handler reads it.
 */
export class ToolInvoker {
  private readonly deadlines = new DeadlineSweep<RunningCall>();
  private readonly watchers: ToolCallWatcher[] = [];

  constructor(
    private readonly lookup: (name: string, connectionId?: string, principal?: string, audience?: ToolAudience) => CatalogueEntry | undefined,
    private readonly logger: Logger,
    private readonly observe?: ToolCallObserver,
  ) {}

  /** Calls running now that did not answer at once (a promise, a stream, a device's answer awaited). */
  get running(): number {
    return this.deadlines.size;
  }

  /** Resolves once no call is {@link running}: at once when none is, else when the last one ends. */
  whenIdle(): Promise<void> {
    return this.deadlines.whenEmpty();
  }

  /**
   * Ends every call running now with `TOOL_UNAVAILABLE` and `message`, as its time limit would
   * (the handler is stopped): each caller answers its client with that failure in its own words.
   * Returns how many there were.
   */
  abandonAll(message: string): number {
    const calls = this.deadlines.items();
    for (const call of calls) call.abandon(message);
    return calls.length;
  }

  /** Looks the tool up as `connectionId`, `principal` and `audience` see it and checks the arguments, once. */
  prepare(name: string, rawArgs: unknown, connectionId?: string, principal?: string, audience?: ToolAudience): PreparedToolCall {
    const entry = this.lookup(name, connectionId, principal, audience);
    const args = rawArgs ?? {};
    if (!entry) return { name, args, problem: { code: 'TOOL_NOT_FOUND', message: `Unknown tool "${name}"` } };
    const problem = checkArguments(entry, args);
    if (problem === undefined) return { name, entry, args };
    return { name, entry, args, problem: { code: 'INVALID_TOOL_PARAMETERS', message: `Invalid arguments for tool "${name}": ${problem}` } };
  }

  /** Adds a watcher of every call from now on. */
  watch(watcher: ToolCallWatcher): void {
    this.watchers.push(watcher);
  }

  /** Runs a prepared call: its outcome at once when the handler answered synchronously. */
  run(prepared: PreparedToolCall, options: InvokeOptions, controls?: ToolCallControls): MaybePromise<ToolOutcome> {
    const outcome = this.watchers.length === 0 ? this.execute(prepared, options, controls) : this.watched(prepared, options, controls);
    const observe = this.observe;
    if (!observe) return outcome;
    const tool = prepared.entry?.tool;
    const ran = prepared.problem === undefined && tool !== undefined;
    if (!isPromise(outcome)) {
      observe(tool, options.protocol, outcome, ran);
      return outcome;
    }
    return outcome.then((settled) => {
      observe(tool, options.protocol, settled, ran);
      return settled;
    });
  }

  /** {@link execute}, told to the watchers; a watcher that throws is logged and does not change the outcome. */
  private watched(prepared: PreparedToolCall, options: InvokeOptions, controls: ToolCallControls | undefined): MaybePromise<ToolOutcome> {
    const watches: ToolCallWatch[] = [];
    for (const watcher of this.watchers) {
      try {
        const watch = watcher.started(prepared, options);
        if (watch) watches.push(watch);
      } catch (error) {
        this.logger.error(`A tool call watcher failed: ${(error as Error)?.stack ?? error}`);
      }
    }
    let run = (): MaybePromise<ToolOutcome> => this.execute(prepared, options, controls);
    for (const watch of watches) {
      if (!watch.within) continue;
      const inner = run;
      run = () => watch.within!(inner);
    }
    return thenMaybe(run(), (outcome) => {
      for (const watch of watches) {
        try {
          watch.ended(outcome);
        } catch (error) {
          this.logger.error(`A tool call watcher failed: ${(error as Error)?.stack ?? error}`);
        }
      }
      return outcome;
    });
  }

  private execute(prepared: PreparedToolCall, options: InvokeOptions, controls: ToolCallControls | undefined): MaybePromise<ToolOutcome> {
    const started = performance.now();
    const { entry, problem } = prepared;
    if (problem || !entry) return failure(problem?.code ?? 'TOOL_NOT_FOUND', problem?.message ?? `Unknown tool "${prepared.name}"`, started);
    const { tool } = entry;
    if (options.signal?.aborted) return this.cancelled(tool, started);
    const call = new RunningCall(tool, options, controls, started, this);
    let returned: unknown;
    try {
      returned = tool.handler(prepared.args as Record<string, unknown>, call.context);
    } catch (error) {
      return this.describeFailure(tool, error, started);
    }
    if (!isPromise(returned) && !isAsyncIterable(returned)) return success(returned, started);
    return call.watch(returned, this.deadlines);
  }

  /** Stops the deadline timer (the app is closing). */
  stop(): void {
    this.deadlines.stop();
  }

  cancelled(tool: ToolDefinition, started: number): ToolFailure {
    return failure('TOOL_EXECUTION_FAILED', `Call to tool "${tool.name}" was cancelled`, started);
  }

  describeFailure(tool: ToolDefinition, error: unknown, started: number): ToolFailure {
    if (error instanceof ToolTimeoutSignal) {
      return failure('TOOL_TIMEOUT', `Tool "${tool.name}" did not finish within ${tool.timeoutMs / 1000} s`, started);
    }
    if (error instanceof ToolError) return failure('TOOL_EXECUTION_FAILED', error.message, started, error.details);
    if (error instanceof GatewayError) {
      if (TOOL_FAILURE_CODES.has(error.code)) return failure(error.code as ToolFailureCode, error.message, started);
      // A reason of the gateway's own (DEVICE_OFFLINE...): the tool failed for it, as a ToolError naming that code would.
      return failure('TOOL_EXECUTION_FAILED', error.message, started, { code: error.code });
    }
    this.logger.error(`Tool "${tool.name}" threw: ${(error as Error)?.stack ?? String(error)}`);
    return { ...failure('TOOL_EXECUTION_FAILED', `Tool "${tool.name}" failed with an internal error`, started), internal: true };
  }
}

/**
 * One call whose handler did not answer at once: it ends on the first of its result, its time
 * limit (the sweep expires it) or its caller's cancellation, and then stops the handler
 * (aborting its signal, if it took one; closing its generator, if it streams).
 */
class RunningCall implements Expiring {
  readonly deadline: number;
  readonly context: ToolCallContext;
  private controller?: AbortController;
  private iterator?: AsyncIterator<unknown>;
  private stopReason?: unknown;
  private stopOutcome?: ToolFailure;
  private settle?: (outcome: ToolOutcome) => void;
  private sweep?: DeadlineSweep<RunningCall>;
  private readonly cancel = () =>
    this.stop(this.options.signal?.reason ?? new DOMException('The caller went away', 'AbortError'), this.invoker.cancelled(this.tool, this.started));

  constructor(
    private readonly tool: ToolDefinition,
    private readonly options: InvokeOptions,
    private readonly controls: ToolCallControls | undefined,
    private readonly started: number,
    private readonly invoker: ToolInvoker,
  ) {
    this.deadline = started + tool.timeoutMs;
    const signal = () => this.signal();
    this.context = {
      principal: options.principal,
      connectionId: options.connectionId,
      sessionId: options.sessionId,
      turnId: options.turnId,
      caller: controls?.caller,
      get signal() {
        return signal();
      },
    };
  }

  watch(returned: unknown, sweep: DeadlineSweep<RunningCall>): Promise<ToolOutcome> {
    return new Promise<ToolOutcome>((resolve) => {
      this.settle = resolve;
      this.sweep = sweep;
      sweep.add(this);
      this.options.signal?.addEventListener('abort', this.cancel, { once: true });
      if (this.controls) this.controls.cancel = this.cancel;
      const result = isAsyncIterable(returned) ? this.drain(returned) : (returned as Promise<unknown>);
      result.then(
        (value) => this.settle && this.finish(this.stopOutcome ?? success(value, this.started)),
        (error: unknown) => this.settle && this.finish(this.stopOutcome ?? this.invoker.describeFailure(this.tool, error, this.started)),
      );
    });
  }

  expire(): void {
    const reason = new ToolTimeoutSignal();
    this.stop(reason, this.invoker.describeFailure(this.tool, reason, this.started));
  }

  abandon(message: string): void {
    this.stop(new GatewayError(GatewayErrorCode.TOOL_UNAVAILABLE, message), failure('TOOL_UNAVAILABLE', message, this.started));
  }

  private signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.stopReason !== undefined) this.controller.abort(this.stopReason);
    }
    return this.controller.signal;
  }

  /**
   * Ends the call with `outcome`. A handler that took the signal hears the stop first and has
   * until its promise settles, or the next turn of the event loop, to act on it, so what it sends
   * on hearing it (an upstream's call withdrawing the questions it relayed to the caller) goes
   * out before the call's answer, not after it.
   */
  private stop(reason: unknown, outcome: ToolFailure): void {
    if (this.stopReason !== undefined) return;
    this.stopReason = reason;
    if (!this.controller) {
      this.finish(outcome);
    } else {
      this.stopOutcome = outcome;
      this.sweep?.delete(this);
      this.controller.abort(reason);
      setImmediate(() => this.finish(outcome));
    }
    if (this.iterator) void Promise.resolve(this.iterator.return?.()).catch(() => undefined);
  }

  private finish(outcome: ToolOutcome): void {
    const settle = this.settle;
    if (!settle) return;
    this.settle = undefined;
    this.sweep?.delete(this);
    this.options.signal?.removeEventListener('abort', this.cancel);
    if (this.controls) this.controls.cancel = undefined;
    settle(outcome);
  }

  /**
   * Drains a streaming handler, passing each piece on, and resolves with its final result: what
   * it returned, else the last piece it yielded. Once the call is over, whatever the generator
   * still yields is dropped: no piece arrives after the outcome.
   */
  private async drain(pieces: AsyncIterable<unknown>): Promise<unknown> {
    const iterator = pieces[Symbol.asyncIterator]();
    this.iterator = iterator;
    let last: unknown;
    for (;;) {
      const step = await iterator.next();
      if (!this.settle || this.stopOutcome) return undefined;
      if (step.done) return step.value !== undefined ? step.value : last;
      last = step.value;
      this.controls?.onPartial?.(last);
    }
  }
}
