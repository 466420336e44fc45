import { Test } from '@nestjs/testing';
import { loadGatewayConfig } from '../config/gateway-config';
import { ToolRegistryService } from '../core/tools/tool-registry.service';
import { GatewayModule } from '../gateway.module';
import { CountdownTools, CountdownUpdate } from './countdown.tools';

describe('countdown', () => {
  const tools = new CountdownTools(loadGatewayConfig({ DEFAULT_TIMEZONE: 'Asia/Shanghai' }));

  beforeEach(() => jest.useFakeTimers({ now: new Date('2026-11-21T10:00:00Z') }));
  afterEach(() => jest.useRealTimers());

  /** Runs a countdown to its end on fake time; each update with the ms since the start it came at. */
  async function runToEnd(args: { seconds: number; interval: number; label?: string }): Promise<[number, CountdownUpdate][]> {
    const started = Date.now();
    const seen: [number, CountdownUpdate][] = [];
    const generator = tools.countdown(args, { signal: new AbortController().signal });
    const drained = (async () => {
      for (let step = await generator.next(); ; step = await generator.next()) {
        seen.push([Date.now() - started, step.value]);
        if (step.done) return;
      }
    })();
    await jest.advanceTimersByTimeAsync(args.seconds * 1000 + 1);
    await drained;
    return seen;
  }

  it('reports the time left every interval and ends with done when the time is up', async () => {
    const update = (remaining_s: number) => ({ label: 'tea', remaining_s, ends_at: '2026-11-21T18:00:03+08:00', done: remaining_s === 0 });
    expect(await runToEnd({ seconds: 3, interval: 1, label: 'tea' })).toEqual([
      [0, update(3)],
      [1000, update(2)],
      [2000, update(1)],
      [3000, update(0)],
    ]);
  });

  it('ends on time when the length is not a multiple of the interval', async () => {
    const updates = await runToEnd({ seconds: 2.5, interval: 1 });
    expect(updates.map(([at, { remaining_s, done }]) => [at, remaining_s, done])).toEqual([
      [0, 2.5, false],
      [1000, 1.5, false],
      [2000, 0.5, false],
      [2500, 0, true],
    ]);
    expect(updates[0][1]).not.toHaveProperty('label');
  });

  it('stops as soon as its call is cancelled, leaving no timer behind', async () => {
    const call = new AbortController();
    const generator = tools.countdown({ seconds: 60, interval: 1 }, { signal: call.signal });
    const first = generator.next();
    await jest.advanceTimersByTimeAsync(0);
    await expect(first).resolves.toMatchObject({ value: { remaining_s: 60 } });
    const waiting = generator.next();
    await jest.advanceTimersByTimeAsync(500);
    call.abort(new Error('caller left'));
    await expect(waiting).rejects.toThrow('caller left');
    expect(jest.getTimerCount()).toBe(0);
  });

  it('is a built-in tool of the catalogue that streams, with its arguments checked', async () => {
    jest.useRealTimers();
    const moduleRef = await Test.createTestingModule({ imports: [GatewayModule.forRoot({ settings: { DEFAULT_TIMEZONE: 'UTC' } })] }).compile();
    await moduleRef.init();
    const registry = moduleRef.get(ToolRegistryService);
    expect(registry.get('countdown')).toMatchObject({ source: 'builtin', tags: expect.arrayContaining(['streaming']) });
    const problemWith = (args: object) => registry.prepare('countdown', args).problem?.message;
    expect(problemWith({ seconds: 0 })).toMatch(/"seconds" must be > 0/);
    expect(problemWith({ seconds: 3601 })).toMatch(/"seconds" must be <= 3600/);
    expect(problemWith({ seconds: 5, interval: 0.01 })).toMatch(/"interval" must be >= 0.1/);
    expect(problemWith({ seconds: 5, every: 1 })).toMatch(/unexpected argument "every"/);

    jest.useFakeTimers();
    const updates: unknown[] = [];
    const outcome = registry.run(registry.prepare('countdown', { seconds: 2 }), {}, { onPartial: (update) => updates.push(update) });
    await jest.advanceTimersByTimeAsync(2001);
    await expect(outcome).resolves.toMatchObject({ ok: true, value: expect.objectContaining({ remaining_s: 0, done: true }) });
    expect(updates).toEqual([expect.objectContaining({ remaining_s: 2, done: false }), expect.objectContaining({ remaining_s: 1, done: false })]);
    await moduleRef.close();
  });
});
