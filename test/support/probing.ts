import { createHook } from 'async_hooks';
import { sep } from 'path';
import { setFlagsFromString } from 'v8';
import { runInNewContext } from 'vm';

/**
 * Inputs and checks the probing suites share: frames nested past any sane depth, keys that would
 * pollute `Object.prototype` if something merged them, the log a gateway writes while probed,
 * a wait for the gateway's state to settle, its live timers, and a full garbage collection.
 */

/** `depth` arrays inside one another around `leaf`, as JSON text (JSON.stringify would overflow the stack). */
export const nestedArrays = (depth: number, leaf = '1'): string => `${'['.repeat(depth)}${leaf}${']'.repeat(depth)}`;

/** `depth` objects inside one another (`{"a":{"a":...}}`), as JSON text. */
export const nestedObjects = (depth: number): string => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;

/** Where a value stands in for one nested too deep to build as an object; see {@link nestedJson}. */
export const NESTED = '__NESTED_10000__';

/** JSON text of `value` with the string {@link NESTED} replaced by objects nested `depth` deep. */
export const nestedJson = (value: unknown, depth = 10_000): string => JSON.stringify(value).replace(`"${NESTED}"`, nestedObjects(depth));

/**
 * Own `__proto__` and `constructor.prototype` keys (as `JSON.parse` makes them, and as a client
 * sends them): anything that merged them into an object would set `polluted` on every object.
 * Spread into a frame, they stay own keys of it.
 */
export const pollutingKeys = (): Record<string, unknown> => JSON.parse('{"__proto__":{"polluted":"yes"},"constructor":{"prototype":{"polluted":"yes"}}}');

/** Whether anything set `polluted` on `Object.prototype` in this process. */
export const prototypePolluted = (): boolean => (({}) as { polluted?: unknown }).polluted !== undefined;

/** A stack frame line as Node prints one (`    at fn (file.js:1:2)`). */
const STACK_LINE = /^\s+at .+:\d+:\d+\)?$/m;

/**
 * Everything this process writes to stdout and stderr from {@link start} on (the in-process
 * gateway logs there), still passed through, so a test can tell whether a stack trace or an
 * internal error was logged while it probed.
 */
export class LogCapture {
  private text = '';
  private restore?: () => void;

  start(): this {
    const streams = [process.stdout, process.stderr];
    const originals = streams.map((stream) => stream.write.bind(stream));
    streams.forEach((stream, index) => {
      stream.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
        this.text += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString();
        return (originals[index] as (...args: unknown[]) => boolean)(chunk, ...rest);
      }) as typeof stream.write;
    });
    this.restore = () => streams.forEach((stream, index) => (stream.write = originals[index] as typeof stream.write));
    return this;
  }

  stop(): void {
    this.restore?.();
  }

  get output(): string {
    return this.text;
  }

  /** Logged stack traces, one line each (the line that holds the first frame), for a readable failure. */
  stackTraces(): string[] {
    return this.text
      .split('\n')
      .filter((line) => STACK_LINE.test(line) || /\\n\s+at .+:\d+:\d+/.test(line))
      .map((line) => line.slice(0, 300));
  }
}

/** Resolves once `condition()` holds; rejects with `what` after `timeoutMs`. */
export async function eventually(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`Still not so after ${timeoutMs} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Timers and other handles the event loop holds, by kind (`Timeout`, `TCPSocketWrap`...). */
export function activeResources(): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const kind of process.getActiveResourcesInfo()) counts[kind] = (counts[kind] ?? 0) + 1;
  return counts;
}

/**
 * Timers the gateway's own code (`src/`) made since {@link start} and still live, unref'd ones
 * included (which `process.getActiveResourcesInfo()` leaves out), found by async_hooks: a timer
 * counts from its creation until it fires or is cleared. Timers of Node's HTTP internals and of
 * the test's clients are not the gateway's to clear.
 */
export class TimerCensus {
  /** Each live timer of the gateway's: its delay and where it was made. */
  private readonly live = new Map<number, string>();
  private readonly hook = createHook({
    init: (id, type, _trigger, resource) => {
      if (type !== 'Timeout') return;
      const madeAt = (new Error().stack ?? '').split('\n').find((line) => line.includes(`${sep}src${sep}`) && !line.includes('node_modules'));
      if (madeAt) this.live.set(id, `${(resource as { _idleTimeout?: number })._idleTimeout} ms timer made ${madeAt.trim()}`);
    },
    destroy: (id) => {
      this.live.delete(id);
    },
  });

  start(): this {
    this.hook.enable();
    return this;
  }

  /** Stops counting, once the destroy events of timers already cleared have come in (they come asynchronously). */
  async stop(): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, 20));
    this.hook.disable();
  }

  /** The live timers, each as its delay and where it was made. */
  get origins(): string[] {
    return [...this.live.values()];
  }
}

/** A full garbage collection, by the V8 flag set at run time (jest runs without `--expose-gc`). */
export function collectGarbage(): void {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  gc();
  gc();
}
