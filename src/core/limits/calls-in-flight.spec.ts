import { CallsInFlight, TooManyCallsError } from './calls-in-flight';

describe('CallsInFlight', () => {
  it('gives a place back at once for a call that answers at once, and when a call throws', () => {
    const calls = new CallsInFlight(1);
    expect(calls.run(() => 42)).toBe(42);
    expect(() =>
      calls.run(() => {
        throw new Error('boom');
      }),
    ).toThrow('boom');
    expect(calls.count).toBe(0);
  });

  it('refuses past the limit until a running call settles, fulfilled or rejected', async () => {
    const calls = new CallsInFlight(2);
    let fail!: (error: Error) => void;
    let succeed!: () => void;
    const failing = calls.run(() => new Promise<void>((_, reject) => (fail = reject)));
    const succeeding = calls.run(() => new Promise<void>((resolve) => (succeed = resolve)));
    expect(() => calls.run(() => 1)).toThrow(TooManyCallsError);
    fail(new Error('upstream down'));
    await expect(failing).rejects.toThrow('upstream down');
    expect(calls.run(() => 'one place free')).toBe('one place free');
    succeed();
    await succeeding;
    expect(calls.count).toBe(0);
  });
});
