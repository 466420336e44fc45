/** Whether `value` is a JSON object: not null, not an array (what a parsed message's params, arguments and `_meta` must be). */
export const isPlainObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);
