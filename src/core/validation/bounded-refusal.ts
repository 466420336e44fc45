/**
 * Values a refused input may hold (array elements and object members, at any depth) for its
 * refusal to name every problem. With `allErrors`, ajv makes one error per bad element, and
 * `ajv-errors` matches each of its messages against every error made so far: naming all the
 * problems of a 1 MB `register_tools` frame of 500,000 numbers would have held the event loop
 * for half an hour, and a 1 MB tool call of a bad array built a 16 MB answer in 1.4 s. Past this
 * bound, a refusal names the first problem only, found by a validator that stops at it.
 */
export const DETAILED_REFUSAL_MAX_VALUES = 256;

/** Most problems one refusal lists; it says how many more there were. */
export const REFUSAL_MAX_PROBLEMS = 10;

/** Whether `value` holds more than `limit` values in all (array elements and object members, at any depth). Iterative; stops at the limit. */
export function holdsMoreValuesThan(value: unknown, limit: number): boolean {
  const stack: unknown[] = [value];
  let count = 0;
  while (stack.length > 0) {
    const node = stack.pop();
    if (node === null || typeof node !== 'object') continue;
    const children = Array.isArray(node) ? node : Object.values(node);
    count += children.length;
    if (count > limit) return true;
    for (const child of children) if (child !== null && typeof child === 'object') stack.push(child);
  }
  return false;
}

/** `problems` without repeats, `; `-joined: at most {@link REFUSAL_MAX_PROBLEMS}, and how many more there were. */
export function joinProblems(problems: readonly string[]): string {
  const distinct = [...new Set(problems)];
  if (distinct.length <= REFUSAL_MAX_PROBLEMS) return distinct.join('; ');
  return `${distinct.slice(0, REFUSAL_MAX_PROBLEMS).join('; ')}; and ${distinct.length - REFUSAL_MAX_PROBLEMS} more`;
}
