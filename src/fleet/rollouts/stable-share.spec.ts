import { inShare, shareBucket, SHARE_BUCKETS } from './stable-share';

const ids = Array.from(
  { length: 10_000 },
  (_, i) => `aa:bb:cc:${((i >> 8) & 0xff).toString(16).padStart(2, '0')}:${(i & 0xff).toString(16).padStart(2, '0')}:01`,
);

describe('a stable share of devices', () => {
  it.each([1, 10, 30, 50, 99.5])('puts %s %% of 10 000 devices in, within a tolerance of 1 point', (percent) => {
    const share = ids.filter((id) => inShare('canary', id, percent)).length / ids.length;
    expect(Math.abs(share * 100 - percent)).toBeLessThan(1);
  });

  it('keeps every device that was in when widened, and never moves one back and forth', () => {
    let previous = new Set<string>();
    for (const percent of [0, 5, 10, 10, 30, 30.25, 60, 100]) {
      const current = new Set(ids.filter((id) => inShare('canary', id, percent)));
      for (const id of previous) expect(current.has(id)).toBe(true);
      previous = current;
    }
    expect(previous.size).toBe(ids.length);
  });

  it('answers the same for the same rollout and device, and gives each rollout its own sample', () => {
    expect(shareBucket('canary', ids[7])).toBe(shareBucket('canary', ids[7]));
    expect(ids.map((id) => shareBucket('canary', id)).every((bucket) => bucket >= 0 && bucket < SHARE_BUCKETS)).toBe(true);
    const first = new Set(ids.filter((id) => inShare('canary', id, 10)));
    const other = ids.filter((id) => inShare('other', id, 10));
    const overlap = other.filter((id) => first.has(id)).length / other.length;
    expect(overlap).toBeLessThan(0.2);
    expect(ids.some((id) => inShare('canary', id, 0))).toBe(false);
  });
});
