import { Injectable, Module } from '@nestjs/common';
import { Tool } from '../../src/core/tools/tool.decorator';
import { ToolError } from '../../src/core/tools/tool-error';
import type { ToolCallContext } from '../../src/core/tools/tool-definition';

const finishedRuns = new Set<string>();
const waiters = new Map<string, () => void>();

/** Resolves once the `test.ticker` call given `run` has ended and its generator has been closed. */
export function tickerRunFinished(run: string, timeoutMs = 3000): Promise<void> {
  if (finishedRuns.has(run)) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`test.ticker run "${run}" still going after ${timeoutMs} ms`)), timeoutMs);
    waiters.set(run, () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(timer), reject(signal.reason)), { once: true });
  });

/**
 * Tools that exist for the tests, some misbehaving on purpose: slow ones, a failing one, an
 * endless stream, one with an argument named `type`. `maxInFlight` shows whether calls overlapped.
 */
@Injectable()
export class TestTools {
  inFlight = 0;
  maxInFlight = 0;

  @Tool({
    name: 'test.wait',
    description: 'Waits, then answers',
    inputSchema: { type: 'object', properties: { ms: { type: 'integer', minimum: 0, maximum: 5000 } }, required: ['ms'] },
  })
  async wait({ ms }: { ms: number }, { signal }: { signal: AbortSignal }) {
    this.inFlight += 1;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, ms);
        signal.addEventListener('abort', () => {
          clearTimeout(timer);
          resolve();
        });
      });
      return { waited_ms: ms };
    } finally {
      this.inFlight -= 1;
    }
  }

  @Tool({ name: 'test.fail', description: 'Always fails', inputSchema: { type: 'object' } })
  fail(): never {
    throw new ToolError('The lights are out of reach');
  }

  @Tool({ name: 'test.sleepy', description: 'Never finishes within its limit', inputSchema: { type: 'object' }, timeoutMs: 100 })
  async sleepy(_args: unknown, { signal }: ToolCallContext): Promise<never> {
    await sleep(60_000, signal);
    throw new Error('unreachable');
  }

  @Tool({
    name: 'test.ticker',
    description: 'Ticks every 20 ms until its call ends',
    inputSchema: { type: 'object', properties: { run: { type: 'string' } }, required: ['run'] },
    timeoutMs: 20_000,
  })
  async *ticker({ run }: { run: string }, { signal }: ToolCallContext): AsyncGenerator<{ tick: number }> {
    try {
      for (let tick = 1; ; tick += 1) {
        yield { tick };
        await sleep(20, signal);
      }
    } finally {
      finishedRuns.add(run);
      waiters.get(run)?.();
    }
  }

  @Tool({
    name: 'test.convert',
    description: 'Converts a temperature',
    inputSchema: {
      type: 'object',
      properties: { type: { enum: ['celsius', 'fahrenheit'] }, value: { type: 'number' } },
      required: ['type', 'value'],
      additionalProperties: false,
    },
  })
  convert({ type, value }: { type: 'celsius' | 'fahrenheit'; value: number }): number {
    return type === 'celsius' ? value * 1.8 + 32 : (value - 32) / 1.8;
  }
}

@Module({ providers: [TestTools] })
export class TestToolsModule {}
