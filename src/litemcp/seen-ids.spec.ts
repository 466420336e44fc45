import { SeenIds } from './seen-ids';

describe('SeenIds', () => {
  it('reports a repeated id', () => {
    const seen = new SeenIds();
    expect(seen.remember(1)).toBe(true);
    expect(seen.remember(2)).toBe(true);
    expect(seen.remember(1)).toBe(false);
  });

  it('forgets the oldest ids beyond its capacity', () => {
    const seen = new SeenIds(3);
    [1, 2, 3, 4].forEach((id) => seen.remember(id));
    expect(seen.remember(1)).toBe(true);
    expect(seen.remember(4)).toBe(false);
  });
});
