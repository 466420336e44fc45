import type { LanguageCode } from '../speech/languages';

export { LANGUAGE_CODES } from '../speech/languages';
export type { LanguageCode } from '../speech/languages';

/** The ten response languages of the LLM gateway spec (7.2), by the wire contract's codes. */
export const LANGUAGES: { readonly [Code in LanguageCode]: { name: string; native: string } } = {
  zh: { name: 'Chinese', native: '中文' },
  en: { name: 'English', native: 'English' },
  ja: { name: 'Japanese', native: '日本語' },
  ko: { name: 'Korean', native: '한국어' },
  de: { name: 'German', native: 'Deutsch' },
  fr: { name: 'French', native: 'Français' },
  ru: { name: 'Russian', native: 'Русский' },
  pt: { name: 'Portuguese', native: 'Português' },
  es: { name: 'Spanish', native: 'Español' },
  it: { name: 'Italian', native: 'Italiano' },
};

/** How the model answers in this session; `configure` and the language/role-play tools change it. */
export interface SessionSettings {
  temperature: number;
  maxTokens: number;
  enableContext: boolean;
  language?: LanguageCode;
  /** The role-play character being played, by name. */
  character?: string;
}

export interface HistoryMessage {
  role: 'user' | 'assistant';
  content: string;
}

/**
 * A conversation that outlives its connection until it times out, so a device that reconnects
 * (to any instance, with a shared store) resumes it. Plain JSON, so any store can keep it.
 */
export interface Session {
  id: string;
  /** The principal that created it; only it may resume the session. */
  owner: string;
  createdAt: number;
  lastActiveAt: number;
  /** Replaced, never changed in place, by the store's writes. */
  settings: Readonly<SessionSettings>;
  /** The last exchanges, oldest first, capped at `CLOUD_SESSION_MAX_HISTORY` messages; replaced, never changed in place. */
  history: readonly Readonly<HistoryMessage>[];
}
