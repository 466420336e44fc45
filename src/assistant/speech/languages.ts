/**
 * The languages the assistant speaks: answers are asked for in them and cleaned for speech in
 * them (numbers, units and symbols said the way each says them). The LLM gateway's wire
 * contract takes this list as its `configure {language}` codes (its `protocol/languages.ts`
 * forwards it; the client SDK's build copies this file itself in its place).
 */
export const LANGUAGE_CODES = ['zh', 'en', 'ja', 'ko', 'de', 'fr', 'ru', 'pt', 'es', 'it'] as const;

export type LanguageCode = (typeof LANGUAGE_CODES)[number];
