import { holdsMoreValuesThan, joinProblems, REFUSAL_MAX_PROBLEMS } from './bounded-refusal';

describe('bounded refusals', () => {
  it('counts array elements and object members at every depth, and stops at the limit', () => {
    expect(holdsMoreValuesThan({ a: [1, 2], b: { c: 3 } }, 5)).toBe(false);
    expect(holdsMoreValuesThan({ a: [1, 2], b: { c: 3 } }, 4)).toBe(true);
    expect(holdsMoreValuesThan('text', 0)).toBe(false);
    expect(holdsMoreValuesThan(Array(1_000_000).fill({}), 256)).toBe(true);
  });

  it('joins distinct problems, at most a few, and says how many more there were', () => {
    expect(joinProblems(['a is bad', 'b is bad', 'a is bad'])).toBe('a is bad; b is bad');
    const many = Array.from({ length: REFUSAL_MAX_PROBLEMS + 3 }, (_, index) => `item ${index} is bad`);
    expect(joinProblems(many)).toBe(`${many.slice(0, REFUSAL_MAX_PROBLEMS).join('; ')}; and 3 more`);
  });
});
