import { Inject, Injectable } from '@nestjs/common';
import { GATEWAY_CONFIG, GatewayConfig } from '../config/gateway-config';
import { zonedTime } from '../core/time/clock';
import type { ToolCallContext } from '../core/tools/tool-definition';
import { BuiltinTool } from '../core/tools/tool.decorator';

/** Longest countdown, in seconds: an hour covers kitchen timers and short reminders. */
export const MAX_COUNTDOWN_S = 3600;

interface CountdownArguments {
  seconds: number;
  interval: number;
  label?: string;
}

/** One update of a countdown; the last one has `remaining_s: 0` and `done: true`. */
export interface CountdownUpdate {
  label?: string;
  remaining_s: number;
  /** When the countdown ends, in `DEFAULT_TIMEZONE` (ISO 8601 with offset). */
  ends_at: string;
  done: boolean;
}

/**
 * A timer for voice assistants ("set a timer for 5 minutes"), and the gateway's streaming tool:
 * callers that stream see the time left at every interval and the end as it happens; callers
 * that do not get the final `done` update once the time is up.
 */
@Injectable()
export class CountdownTools {
  constructor(@Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig) {}

  @BuiltinTool({
    name: 'countdown',
    description:
      'A countdown timer, like a kitchen timer: reports the time left every interval and ends with done: true when the time is up. Streaming callers get every update as it happens; others get the final update when the countdown ends.',
    inputSchema: {
      type: 'object',
      properties: {
        seconds: {
          type: 'number',
          exclusiveMinimum: 0,
          maximum: MAX_COUNTDOWN_S,
          description: `Length of the countdown in seconds, at most ${MAX_COUNTDOWN_S}`,
          examples: [300],
        },
        interval: {
          type: 'number',
          minimum: 0.1,
          default: 1,
          description: 'Seconds between two updates',
        },
        label: { type: 'string', maxLength: 100, description: 'What the timer is for, repeated in every update', examples: ['pasta'] },
      },
      required: ['seconds'],
      additionalProperties: false,
    },
    outputSchema: {
      type: 'object',
      properties: {
        label: { type: 'string' },
        remaining_s: { type: 'number' },
        ends_at: { type: 'string' },
        done: { type: 'boolean' },
      },
      required: ['remaining_s', 'ends_at', 'done'],
    },
    examples: [{ description: 'Set a 5 minute timer for the pasta', arguments: { seconds: 300, interval: 60, label: 'pasta' } }],
    // The whole countdown is one call: its limit is the longest countdown, not SERVER_TOOL_TIMEOUT.
    timeoutMs: (MAX_COUNTDOWN_S + 5) * 1000,
    longRunning: true,
    tags: ['time', 'timer', 'streaming'],
  })
  async *countdown({ seconds, interval, label }: CountdownArguments, { signal }: ToolCallContext): AsyncGenerator<CountdownUpdate, CountdownUpdate> {
    const durationMs = Math.round(seconds * 1000);
    const intervalMs = Math.round(interval * 1000);
    const startedAt = performance.now();
    const endsAt = zonedTime(new Date(Date.now() + durationMs), this.config.tools.defaultTimezone).iso;
    const update = (remainingMs: number): CountdownUpdate => ({
      ...(label === undefined ? {} : { label }),
      remaining_s: remainingMs / 1000,
      ends_at: endsAt,
      done: remainingMs === 0,
    });
    // Updates are scheduled from the start, not from each other, so the countdown does not drift.
    for (let elapsedMs = 0; elapsedMs < durationMs; elapsedMs += intervalMs) {
      await sleepUntil(startedAt + elapsedMs, signal);
      yield update(durationMs - elapsedMs);
    }
    await sleepUntil(startedAt + durationMs, signal);
    return update(0);
  }
}

/** Waits until `performance.now()` reaches `at`; rejects with the signal's reason once it aborts. */
function sleepUntil(at: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(
      () => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      },
      Math.max(0, at - performance.now()),
    );
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
