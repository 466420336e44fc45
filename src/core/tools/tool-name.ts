/**
 * The LLM gateway spec's naming rule (4.6): a letter or `_` first; letters, digits, `_` and `.`
 * after; 1-64 characters; no trailing dot and no doubled dot. Dots group tools into namespaces.
 */
const TOOL_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_.]{0,63}$/;

/** Why `name` is not a valid tool name, or `undefined` when it is. */
export function toolNameProblem(name: unknown): string | undefined {
  if (typeof name !== 'string' || name.length === 0) return 'Tool name must be a non-empty string';
  if (name.length > 64) return `Tool name "${name}" is longer than 64 characters`;
  if (!TOOL_NAME_PATTERN.test(name)) {
    return `Tool name "${name}" must start with a letter or "_" and contain only letters, digits, "_" and "."`;
  }
  if (name.endsWith('.')) return `Tool name "${name}" must not end with "."`;
  if (name.includes('..')) return `Tool name "${name}" must not contain ".."`;
  return undefined;
}

export function isValidToolName(name: unknown): name is string {
  return toolNameProblem(name) === undefined;
}
