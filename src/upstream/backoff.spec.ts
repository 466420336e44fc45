import { retryDelayMs } from './backoff';

describe('retryDelayMs', () => {
  it('doubles from the minimum up to the maximum', () => {
    const top = () => 1;
    expect([1, 2, 3, 4, 5, 6, 7, 8].map((attempt) => retryDelayMs(attempt, 1000, 30_000, top))).toEqual([
      1000, 2000, 4000, 8000, 16_000, 30_000, 30_000, 30_000,
    ]);
    expect(retryDelayMs(10_000, 1000, 30_000, top)).toBe(30_000);
  });

  it('jitters between half and all of the step, never under the minimum', () => {
    expect(retryDelayMs(4, 1000, 30_000, () => 0)).toBe(4000);
    expect(retryDelayMs(4, 1000, 30_000, () => 0.5)).toBe(6000);
    expect(retryDelayMs(1, 1000, 30_000, () => 0)).toBe(1000);
    expect(retryDelayMs(20, 1000, 30_000, () => 0)).toBe(15_000);
  });
});
