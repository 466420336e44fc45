import type { LanguageCode } from './protocol';

/** What the assistant says while a slow tool round runs, in each language the gateway answers in. */
export const FILLERS: Readonly<Record<LanguageCode, string>> = {
  zh: '稍等，我查一下。',
  en: 'One moment, let me check.',
  ja: '少々お待ちください、確認します。',
  ko: '잠시만요, 확인해 볼게요.',
  de: 'Einen Moment, ich sehe nach.',
  fr: 'Un instant, je vérifie.',
  ru: 'Минутку, сейчас проверю.',
  pt: 'Um momento, vou verificar.',
  es: 'Un momento, lo compruebo.',
  it: 'Un attimo, controllo.',
};
