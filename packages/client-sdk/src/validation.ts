import { ConfigureSettings, LANGUAGE_CODES, MAX_TOKENS_CEILING } from './protocol/index.js';

/**
 * Checks a request the way the gateway will, before it is sent. The gateway answers a request
 * it cannot read with an `error` frame that names no request, so a bad value caught here is
 * one the client never has to guess the owner of.
 */

/** The text of a turn, trimmed; a TypeError when it is not a non-empty string. */
export function checkText(text: unknown): string {
  if (typeof text !== 'string') throw new TypeError('text must be a string');
  if (text.trim() === '') throw new TypeError('Text cannot be empty');
  return text;
}

export function checkSessionId(sessionId: unknown, what = 'session id'): string {
  if (typeof sessionId !== 'string' || sessionId.trim() === '') {
    throw new TypeError(`${what} must be a non-empty string`);
  }
  return sessionId;
}

const SETTING_CHECKS: { [K in keyof Required<ConfigureSettings>]: (value: unknown) => string | undefined } = {
  temperature: (value) => (typeof value === 'number' && value >= 0 && value <= 1 ? undefined : 'temperature must be a number from 0 to 1'),
  max_tokens: (value) =>
    Number.isInteger(value) && (value as number) >= 1 && (value as number) <= MAX_TOKENS_CEILING
      ? undefined
      : `max_tokens must be an integer from 1 to ${MAX_TOKENS_CEILING}`,
  enable_context: (value) => (typeof value === 'boolean' ? undefined : 'enable_context must be true or false'),
  language: (value) => ((LANGUAGE_CODES as readonly unknown[]).includes(value) ? undefined : `language must be one of ${LANGUAGE_CODES.join(', ')}`),
  clean_response: (value) => (typeof value === 'boolean' ? undefined : 'clean_response must be true or false'),
  stream: (value) => (typeof value === 'boolean' ? undefined : 'stream must be true or false'),
  barge_in: (value) => (typeof value === 'boolean' ? undefined : 'barge_in must be true or false'),
};

/** The settings without `undefined` entries; a TypeError naming every bad or unknown one. */
export function checkSettings(settings: unknown): ConfigureSettings {
  if (settings === null || typeof settings !== 'object' || Array.isArray(settings)) {
    throw new TypeError('settings must be an object');
  }
  const checked: Record<string, unknown> = {};
  const problems: string[] = [];
  for (const [name, value] of Object.entries(settings)) {
    if (value === undefined) continue;
    const check = SETTING_CHECKS[name as keyof ConfigureSettings];
    const problem = check ? check(value) : `unknown setting "${name}" (known: ${Object.keys(SETTING_CHECKS).join(', ')})`;
    if (problem) problems.push(problem);
    else checked[name] = value;
  }
  if (problems.length > 0) throw new TypeError(problems.join('; '));
  return checked as ConfigureSettings;
}
