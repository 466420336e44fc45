import { backoffDelay, DEFAULT_RECONNECT, reconnectPolicy } from '../src/backoff';

describe('reconnection backoff', () => {
  const policy = reconnectPolicy({ initialDelayMs: 100, maxDelayMs: 1000, factor: 2, jitter: 0 });

  it('doubles from the initial delay up to the cap', () => {
    expect([1, 2, 3, 4, 5, 6].map((attempt) => backoffDelay(attempt, policy))).toEqual([100, 200, 400, 800, 1000, 1000]);
  });

  it('spreads each delay by the jitter either way, never past the cap', () => {
    const jittered = reconnectPolicy({ initialDelayMs: 100, maxDelayMs: 1000, jitter: 0.5 });
    expect(backoffDelay(1, jittered, () => 0)).toBe(50);
    expect(backoffDelay(1, jittered, () => 0.999999)).toBe(150);
    expect(backoffDelay(10, jittered, () => 0.999999)).toBe(1000);
    expect(backoffDelay(10, jittered, () => 0)).toBe(500);
  });

  it('fills in defaults and refuses values that make no sense, naming each', () => {
    expect(reconnectPolicy()).toEqual(DEFAULT_RECONNECT);
    expect(reconnectPolicy({ maxAttempts: undefined, factor: 3 })).toEqual({ ...DEFAULT_RECONNECT, factor: 3 });
    expect(() => reconnectPolicy({ initialDelayMs: -1, jitter: 2 })).toThrow(
      new RangeError('Invalid reconnect options: initialDelayMs must be 0 or more; jitter must be between 0 and 1'),
    );
    expect(() => reconnectPolicy({ initialDelayMs: 500, maxDelayMs: 100 })).toThrow(/maxDelayMs must be at least initialDelayMs/);
    expect(() => reconnectPolicy({ maxAttempts: 0 })).toThrow(/maxAttempts must be 1 or more/);
    expect(() => reconnectPolicy({ factor: Number.NaN })).toThrow(/factor must be 1 or more/);
  });
});
