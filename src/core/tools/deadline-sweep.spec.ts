import { DeadlineSweep, Expiring } from './deadline-sweep';

describe('DeadlineSweep', () => {
  beforeEach(() => jest.useFakeTimers({ doNotFake: ['nextTick'] }));
  afterEach(() => jest.useRealTimers());

  const item = (deadline: number, expired: string[], name: string): Expiring => ({ deadline, expire: () => expired.push(name) });

  it('expires each item at its deadline, whatever order they came in, with one timer', () => {
    const sweep = new DeadlineSweep();
    const expired: string[] = [];
    const now = performance.now();
    sweep.add(item(now + 300, expired, 'late'));
    sweep.add(item(now + 100, expired, 'early'));
    sweep.add(item(now + 200, expired, 'middle'));
    expect(jest.getTimerCount()).toBe(1);
    jest.advanceTimersByTime(150);
    expect(expired).toEqual(['early']);
    jest.advanceTimersByTime(200);
    expect(expired).toEqual(['early', 'middle', 'late']);
    expect(jest.getTimerCount()).toBe(0);
  });

  it('never expires an item taken out, and leaves no timer once empty', () => {
    const sweep = new DeadlineSweep();
    const expired: string[] = [];
    const done = item(performance.now() + 100, expired, 'done');
    sweep.add(done);
    sweep.delete(done);
    expect(jest.getTimerCount()).toBe(0);
    jest.advanceTimersByTime(500);
    expect(expired).toEqual([]);
  });

  it('tells when it empties: at once when empty, else once the last item leaves, ended or expired', async () => {
    const sweep = new DeadlineSweep();
    await expect(sweep.whenEmpty()).resolves.toBeUndefined();
    const expired: string[] = [];
    const ended = item(performance.now() + 1000, expired, 'ended');
    sweep.add(ended);
    sweep.add(item(performance.now() + 100, expired, 'expired'));
    let emptied = false;
    void sweep.whenEmpty().then(() => (emptied = true));
    sweep.delete(ended);
    await Promise.resolve();
    expect(emptied).toBe(false);
    jest.advanceTimersByTime(150);
    await Promise.resolve();
    expect(expired).toEqual(['expired']);
    expect(emptied).toBe(true);
  });
});
