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
 * The patterns become one regular expression; each answer is remembered, so the check on a tool
 * call is a map lookup (the catalogue is small, and the memo is bounded for client-chosen names).
 */
export function toolMatcher(patterns: readonly string[]): (toolName: string) => boolean {
  if (patterns.length === 0) return () => false;
  const expression = globExpression(patterns);
  const memo = new Map<string, boolean>();
  return (toolName) => {
    let matched = memo.get(toolName);
    if (matched === undefined) {
      matched = expression.test(toolName);
      if (memo.size >= MEMO_LIMIT) memo.clear();
      memo.set(toolName, matched);
    }
    return matched;
  };
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** `patterns` as one regular expression, without the memo: for names each tested once (the devices a fan-out's glob names). */
export function globExpression(patterns: readonly string[]): RegExp {
  const alternatives = patterns.map((pattern) => pattern.split('*').map(escapeRegExp).join('.*'));
  return new RegExp(`^(?:${alternatives.join('|')})$`);
}
