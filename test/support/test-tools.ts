import { Injectable, Module } from '@nestjs/common';
import { Tool, ToolError } from '../../src';

/** Tools that misbehave on purpose, for tests of concurrency, time limits and failures. */
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
}

@Module({ providers: [TestTools] })
export class TestToolsModule {}
