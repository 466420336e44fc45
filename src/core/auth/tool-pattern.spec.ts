import { globMatcher, toolMatcher } from './tool-pattern';

/** The regular expression globs used to be: the reference for what they mean (on cases it answers quickly). */
const asRegExp = (pattern: string) =>
  new RegExp(
    `^${pattern
      .split('*')
      .map((run) => run.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*')}$`,
  );

describe('glob patterns (tokens-file grants, fan-out globs)', () => {
  const names = ['kitchen-speaker', 'kitchen-', 'kitchen', 'hall-speaker', 'AA:BB:CC:DD:EE:01', 'device.light.set', 'device', 'a', '', 'ab', 'aab', 'aba'];
  const patterns = [
    'kitchen-*',
    '*',
    '**',
    '*-speaker',
    '*speaker*',
    'AA:BB:*',
    'device.*',
    'device*set',
    'a*b',
    'ab*b',
    '*a*',
    'a**b',
    '*.*.*',
    'kitchen',
    'x*',
  ];

  it('means what the regular expression of each glob meant', () => {
    for (const pattern of patterns) {
      const matches = globMatcher([pattern]);
      for (const name of names) expect([pattern, name, matches(name)]).toEqual([pattern, name, asRegExp(pattern).test(name)]);
    }
  });

  it('matches any of several patterns, and nothing with none', () => {
    const matches = toolMatcher(['kitchen-*', 'calculator']);
    expect(['kitchen-1', 'calculator', 'calculator2', 'hall-1'].map(matches)).toEqual([true, true, false, false]);
    expect(toolMatcher([])('anything')).toBe(false);
  });

  it('answers patterns made to backtrack at once (these held a regular expression for minutes)', () => {
    const id = 'a'.repeat(62);
    expect(globMatcher(['a*a*a*a*a*a*a*a*b'])(id)).toBe(false);
    expect(globMatcher(['a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b'])(id)).toBe(false);
    expect(globMatcher(['*a'.repeat(64)])(id)).toBe(false);
    expect(globMatcher(['*a'.repeat(31)])(id)).toBe(true);
    expect(globMatcher([`${'*a'.repeat(63)}*b`])(id)).toBe(false);
    expect(globMatcher([`*${'a'.repeat(30)}b*${'a'.repeat(30)}b*`])(`${'a'.repeat(30)}b${'a'.repeat(30)}b`)).toBe(true);
  });
});
