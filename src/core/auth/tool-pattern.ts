/** The characters a tool pattern may hold: those of tool names, and `*`. */
export const TOOL_PATTERN = /^[A-Za-z0-9_.*]{1,128}$/;

/** How many tool names a matcher remembers its answer for before it starts afresh. */
const MEMO_LIMIT = 4096;

/**
 * Whether a tool name matches any of `patterns`: names and globs where `*` stands for any run of
 * characters, dots included (`device.*` matches `device.light.set`), and every other character
 * stands for itself. Tool names are dotted paths, not file paths, so `.` and `/` are nothing
 * special and there is no `?`, `[...]` or `{a,b}`: a pattern reads exactly as it looks.
 *
 * Each answer is remembered, so the check on a tool call is a map lookup (the catalogue is
 * small, and the memo is bounded for client-chosen names).
 */
export function toolMatcher(patterns: readonly string[]): (toolName: string) => boolean {
  if (patterns.length === 0) return () => false;
  const matches = globMatcher(patterns);
  const memo = new Map<string, boolean>();
  return (toolName) => {
    let matched = memo.get(toolName);
    if (matched === undefined) {
      matched = matches(toolName);
      if (memo.size >= MEMO_LIMIT) memo.clear();
      memo.set(toolName, matched);
    }
    return matched;
  };
}

/**
 * `patterns` as one test, without the memo: for names each tested once (the devices a fan-out's
 * glob names). It cannot backtrack: a glob is its literal runs between the `*`s, the first
 * anchored at the start, the last at the end, and each run between found at its leftmost place
 * after the one before (leftmost is always right, since a `*` takes whatever lies between). So a
 * test costs at most the name's length times the pattern's in character comparisons, in native
 * `indexOf`, whatever the pattern: `a*a*a*a*a*a*a*a*b` against 62 `a`s is 8 searches, where a
 * regular expression of it backtracked for half a minute.
 */
export function globMatcher(patterns: readonly string[]): (name: string) => boolean {
  const tests = patterns.map(globTest);
  return tests.length === 1 ? tests[0] : (name) => tests.some((test) => test(name));
}

function globTest(pattern: string): (name: string) => boolean {
  const runs = pattern.split('*');
  if (runs.length === 1) return (name) => name === pattern;
  const first = runs[0];
  const last = runs[runs.length - 1];
  const middle = runs.slice(1, -1).filter((run) => run !== '');
  const shortest = runs.reduce((length, run) => length + run.length, 0);
  return (name) => {
    if (name.length < shortest || !name.startsWith(first) || !name.endsWith(last)) return false;
    const end = name.length - last.length;
    let at = first.length;
    for (const run of middle) {
      const found = name.indexOf(run, at);
      if (found < 0 || found + run.length > end) return false;
      at = found + run.length;
    }
    return true;
  };
}
