/**
 * How the firmware reads JSON with cJSON, where that differs from plain JavaScript: its key
 * lookup ignores ASCII case, `IsObject` is false for arrays and null, and an integer field is
 * read as `valueint` (truncated, saturated at the int range).
 */

const INT_MAX = 2_147_483_647;
const INT_MIN = -2_147_483_648;

export type JsonObject = Record<string, unknown>;

/** cJSON_IsObject. */
export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** cJSON_GetObjectItem: the value of the first key (in the text's order) equal to `name` ignoring ASCII case. */
export function objectItem(object: unknown, name: string): unknown {
  if (!isJsonObject(object)) return undefined;
  const wanted = asciiLowerCase(name);
  const key = Object.keys(object).find((candidate) => asciiLowerCase(candidate) === wanted);
  return key === undefined ? undefined : object[key];
}

/** cJSON's `valueint` of a number item. */
export function valueInt(value: number): number {
  if (value >= INT_MAX) return INT_MAX;
  if (value <= INT_MIN) return INT_MIN;
  return Math.trunc(value);
}

function asciiLowerCase(text: string): string {
  return text.replace(/[A-Z]/g, (letter) => letter.toLowerCase());
}
