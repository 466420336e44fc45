import { isValidToolName } from '../core/tools/tool-name';
import { catalogueNames, defaultPrefix, prefixProblem } from './upstream-tool-names';

describe('upstream tool names', () => {
  it('puts the prefix first and keeps valid names as they are', () => {
    expect([...catalogueNames('everything.', ['echo', 'get_sum', 'files.read']).values()]).toEqual([
      'everything.echo',
      'everything.get_sum',
      'everything.files.read',
    ]);
  });

  it('makes MCP names valid: other characters become "_", dots are single and never last, no leading digit', () => {
    const names = catalogueNames('', ['get-sum', 'files/read', 'a..b.', '9lives', 'émoji ok']);
    expect([...names.values()]).toEqual(['get_sum', 'files_read', 'a.b', '_9lives', '_moji_ok']);
    expect([...names.values()].every(isValidToolName)).toBe(true);
  });

  it('gives names that clash or run past 64 characters a stable hash suffix, leaving an unchanged name alone', () => {
    const names = catalogueNames('s.', ['a_b', 'a-b', 'a+b', 'x'.repeat(80)]);
    expect(names.get('a_b')).toBe('s.a_b');
    expect(names.get('a-b')).toMatch(/^s\.a_b_[0-9a-f]{6}$/);
    expect(names.get('a+b')).toMatch(/^s\.a_b_[0-9a-f]{6}$/);
    expect(names.get('a-b')).not.toBe(names.get('a+b'));
    expect(names.get('x'.repeat(80))).toHaveLength(64);
    expect(catalogueNames('s.', ['a-b', 'a+b']).get('a-b')).toBe(names.get('a-b'));
    expect([...names.values()].every(isValidToolName)).toBe(true);
  });

  it("derives a server's default prefix from its name", () => {
    expect(defaultPrefix('home')).toBe('home.');
    expect(defaultPrefix('brave-search')).toBe('brave_search.');
    expect(defaultPrefix('1password')).toBe('_1password.');
  });

  it('accepts prefixes that start valid names, and none at all', () => {
    expect(prefixProblem('')).toBeUndefined();
    expect(prefixProblem('gh_')).toBeUndefined();
    expect(prefixProblem('home.lights.')).toBeUndefined();
    expect(prefixProblem('9.')).toMatch(/prefix "9\." must start with a letter/);
    expect(prefixProblem('a..')).toMatch(/single dots/);
    expect(prefixProblem('my-tools.')).toBeDefined();
  });
});
