import { Logger } from '@nestjs/common';
import { mkdtempSync, rmSync, writeFileSync } from 'fs';
import type Redis from 'ioredis';
import { tmpdir } from 'os';
import { join } from 'path';
import { inspector, removeKeys, TEST_REDIS_URL, uniquePrefix } from '../../../test/support/redis';
import { loadGatewayConfig } from '../../config/gateway-config';
import { AccessTokenService } from '../auth/access-token.service';
import { GatewayState } from '../state/gateway-state';
import { BudgetExceededError } from './budget-exceeded.error';
import { periodAt } from './budget-meters';
import { BudgetService } from './budget.service';
import type { BudgetObserver } from './budget-observer';

const TOKENS = `tokens:
  - name: home
    token: home-secret-1
    budgets:
      llm_tokens_per_month: 5000
      tts_chars_per_day: 1000
      per_device: {llm_tokens_per_day: 1000, stt_seconds_per_day: 60}
  - name: free
    token: free-secret-1
`;

describe('periodAt', () => {
  it('runs over UTC calendar days and months', () => {
    const at = Date.UTC(2026, 11, 31, 23, 59, 59);
    expect(periodAt('day', at)).toEqual({ period: 'day', id: '2026-12-31', resetsAt: Date.UTC(2027, 0, 1) });
    expect(periodAt('month', at)).toEqual({ period: 'month', id: '2026-12', resetsAt: Date.UTC(2027, 0, 1) });
    expect(periodAt('month', Date.UTC(2028, 1, 29, 12))).toMatchObject({ id: '2028-02', resetsAt: Date.UTC(2028, 2, 1) });
  });
});

describe.each([
  ['in memory', false],
  ['in Redis', true],
])('BudgetService %s', (_name, withRedis) => {
  let dir: string;
  let inspect: Redis | undefined;
  let prefix: string;
  const services: BudgetService[] = [];
  const seen: [string, string, number][] = [];
  const observer: BudgetObserver = {
    usageCharged: (principal, meter, amount) => seen.push([principal, meter, amount]),
    budgetRefused: () => undefined,
  };

  beforeAll(async () => {
    Logger.overrideLogger(false);
    dir = mkdtempSync(join(tmpdir(), 'vtg-budgets-'));
    writeFileSync(join(dir, 'tokens.yaml'), TOKENS, { mode: 0o600 });
    if (withRedis) inspect = await inspector();
  });
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await inspect?.quit();
  });
  beforeEach(() => {
    prefix = uniquePrefix();
    seen.length = 0;
  });
  afterEach(async () => {
    await Promise.all(services.splice(0).map((service) => service.onApplicationShutdown()));
    if (inspect) await removeKeys(inspect, prefix);
  });

  /** An instance's budgets: on the test's Redis prefix (another replica each call), or in its own memory. */
  async function start(): Promise<BudgetService> {
    const config = loadGatewayConfig({
      AUTH_TOKENS_FILE: join(dir, 'tokens.yaml'),
      ...(withRedis ? { REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: prefix } : {}),
    });
    const service = new BudgetService(new AccessTokenService(config), new GatewayState(config), observer);
    await service.onModuleInit();
    services.push(service);
    return service;
  }

  const kitchen = { principal: 'name:home', deviceId: 'kitchen' };

  it("refuses a spend once the device's own budget is spent, saying which and until when; other devices go on", async () => {
    const budgets = await start();
    await budgets.spend(kitchen, 'stt_seconds', 45_000);
    await budgets.spend(kitchen, 'stt_seconds', 20_000);
    const refusal = await budgets.spend(kitchen, 'stt_seconds', 1_000).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(BudgetExceededError);
    expect(refusal).toMatchObject({
      code: 'BUDGET_EXCEEDED',
      budget: { meter: 'stt_seconds', period: 'day', scope: 'device', limit: 60, resets_at: new Date(periodAt('day', Date.now()).resetsAt).toISOString() },
    });
    expect((refusal as Error).message).toMatch(
      /^This device's daily budget of 60 seconds of recognized audio is spent; it resets at \d{4}-\d\d-\d\dT00:00:00Z$/,
    );
    await budgets.spend({ principal: 'name:home', deviceId: 'hall' }, 'stt_seconds', 1_000);
    const usage = await budgets.deviceUsage('kitchen', 'name:home');
    expect(usage.stt_seconds.day).toMatchObject({ used: 65, limit: 60, remaining: 0 });
    expect(usage.stt_seconds.month).toMatchObject({ used: 65, limit: null, remaining: null });
    expect(seen).toEqual([
      ['home', 'stt_seconds', 45],
      ['home', 'stt_seconds', 20],
      ['home', 'stt_seconds', 1],
    ]);
  });

  it("refuses every device of a principal once the principal's budget is spent", async () => {
    const budgets = await start();
    await budgets.spend({ principal: 'name:home', deviceId: 'a' }, 'tts_chars', 600);
    await budgets.spend({ principal: 'name:home', deviceId: 'b' }, 'tts_chars', 600);
    await expect(budgets.spend({ principal: 'name:home', deviceId: 'c' }, 'tts_chars', 1)).rejects.toMatchObject({ budget: { scope: 'principal' } });
    // A check of another meter refuses too: a speaking turn is refused before the model is asked.
    await expect(budgets.reserve({ principal: 'name:home', deviceId: 'c' }, 'llm_tokens', 100, ['tts_chars'])).rejects.toMatchObject({
      budget: { meter: 'tts_chars' },
    });
    // A principal without budgets is counted, never refused; so is the anonymous one.
    await budgets.spend({ principal: 'name:free', deviceId: 'x' }, 'tts_chars', 1e9);
    await budgets.spend({}, 'tts_chars', 1e9);
    expect((await budgets.deviceUsage('x', 'name:free')).tts_chars.day).toMatchObject({ used: 1e9, limit: null });
  });

  it("applies the stricter of the file's per_device limit and the owner's", async () => {
    const budgets = await start();
    await budgets.setOwnerLimits('kitchen', { llm_tokens_per_day: 200, tts_chars_per_month: 50 });
    expect((await budgets.limitsFor(kitchen)).device).toEqual({ llm_tokens_per_day: 200, stt_seconds_per_day: 60, tts_chars_per_month: 50 });
    await budgets.setOwnerLimits('kitchen', { llm_tokens_per_day: 5000 });
    expect((await budgets.limitsFor(kitchen)).device).toEqual({ llm_tokens_per_day: 1000, stt_seconds_per_day: 60 });
  });

  it('reserves a turn, charges what it used and gives the reservation back', async () => {
    const budgets = await start();
    const reservation = await budgets.reserve(kitchen, 'llm_tokens', 300);
    expect((await budgets.deviceUsage('kitchen', 'name:home')).llm_tokens.day.used).toBe(300);
    await reservation.charge(120);
    await reservation.release();
    await reservation.release();
    expect((await budgets.deviceUsage('kitchen', 'name:home')).llm_tokens.day).toMatchObject({ used: 120, remaining: 880 });
    expect(seen).toEqual([['home', 'llm_tokens', 120]]);
  });

  if (withRedis) {
    it('lets spends through, and charges nothing, while its Redis fails (as rate limits do)', async () => {
      const budgets = await start();
      await budgets.spend(kitchen, 'stt_seconds', 60_000);
      await expect(budgets.spend(kitchen, 'stt_seconds', 1_000)).rejects.toBeInstanceOf(BudgetExceededError);
      await budgets.onApplicationShutdown();
      await expect(budgets.spend(kitchen, 'stt_seconds', 1_000)).resolves.toBeUndefined();
      const reservation = await budgets.reserve(kitchen, 'llm_tokens', 100);
      await expect(reservation.charge(50)).resolves.toBeUndefined();
      await expect(reservation.release()).resolves.toBeUndefined();
    });
  }

  it('lets exactly the allowed count of 50 concurrent turns through, over two instances, and overruns by at most one turn', async () => {
    const instances = withRedis ? await Promise.all([start(), start()]) : [await start()];
    // Each turn reserves its max_tokens (100) and uses 90: the device's 1000 tokens a day allow exactly 10 at once.
    const turn = async (i: number): Promise<boolean> => {
      const budgets = instances[i % instances.length];
      const reservation = await budgets.reserve(kitchen, 'llm_tokens', 100).catch((error: unknown) => {
        if (error instanceof BudgetExceededError) return undefined;
        throw error;
      });
      if (!reservation) return false;
      await new Promise((resolve) => setTimeout(resolve, 20));
      await reservation.charge(90);
      await reservation.release();
      return true;
    };
    const admitted = await Promise.all(Array.from({ length: 50 }, (_, i) => turn(i)));
    expect(admitted.filter(Boolean)).toHaveLength(10);
    expect((await instances[0].deviceUsage('kitchen', 'name:home')).llm_tokens.day.used).toBe(900);
    // Sequential turns go on until the budget is spent: the last one admitted ends at most one turn past it.
    let more = 0;
    while (await turn(0)) more += 1;
    expect(more).toBe(2);
    const used = (await instances[0].deviceUsage('kitchen', 'name:home')).llm_tokens.day.used;
    expect(used).toBe(1080);
    expect(used - 1000).toBeLessThanOrEqual(100);
  });
});
