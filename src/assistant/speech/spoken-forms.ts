import type { LanguageCode } from './languages';

/** How a language says the symbols a text-to-speech engine would misread; numbers stay digits. */
interface SpokenLanguage {
  celsius: (n: string) => string;
  fahrenheit: (n: string) => string;
  percent: (n: string) => string;
  permille: (n: string) => string;
  kmh: (n: string) => string;
  squareMeters: (n: string) => string;
  /** `20~25`. */
  range: (a: string, b: string) => string;
  /** `A → B`. */
  arrow: (a: string, b: string) => string;
  /** `A & B`. */
  and: (a: string, b: string) => string;
  /** `3/4`. */
  fraction: (numerator: string, denominator: string) => string;
}

/** Languages written without spaces between words join the word to the numbers. */
const spaced = (word: string) => (a: string, b: string) => `${a} ${word} ${b}`;
const joined = (word: string) => (a: string, b: string) => `${a}${word}${b}`;
const suffix = (word: string) => (n: string) => `${n} ${word}`;

const LANGUAGES: Record<LanguageCode, SpokenLanguage> = {
  zh: {
    celsius: (n) => `${n}摄氏度`,
    fahrenheit: (n) => `${n}华氏度`,
    percent: (n) => `百分之${n}`,
    permille: (n) => `千分之${n}`,
    kmh: (n) => `${n}公里每小时`,
    squareMeters: (n) => `${n}平方米`,
    range: joined('到'),
    arrow: joined('到'),
    and: joined('和'),
    fraction: (a, b) => `${b}分之${a}`,
  },
  ja: {
    celsius: (n) => `${n}度`,
    fahrenheit: (n) => `華氏${n}度`,
    percent: (n) => `${n}パーセント`,
    permille: (n) => `${n}パーミル`,
    kmh: (n) => `時速${n}キロ`,
    squareMeters: (n) => `${n}平方メートル`,
    range: joined('から'),
    arrow: joined('から'),
    and: joined('と'),
    fraction: (a, b) => `${b}分の${a}`,
  },
  ko: {
    celsius: (n) => `${n}도`,
    fahrenheit: (n) => `화씨 ${n}도`,
    percent: (n) => `${n}퍼센트`,
    permille: (n) => `${n}퍼밀`,
    kmh: (n) => `시속 ${n}킬로미터`,
    squareMeters: (n) => `${n}제곱미터`,
    range: (a, b) => `${a}에서 ${b}`,
    arrow: (a, b) => `${a}에서 ${b}`,
    and: (a, b) => `${a}와 ${b}`,
    fraction: (a, b) => `${b}분의 ${a}`,
  },
  en: {
    celsius: suffix('degrees Celsius'),
    fahrenheit: suffix('degrees Fahrenheit'),
    percent: suffix('percent'),
    permille: suffix('per mille'),
    kmh: suffix('kilometers per hour'),
    squareMeters: suffix('square meters'),
    range: spaced('to'),
    arrow: spaced('to'),
    and: spaced('and'),
    fraction: spaced('over'),
  },
  de: {
    celsius: suffix('Grad Celsius'),
    fahrenheit: suffix('Grad Fahrenheit'),
    percent: suffix('Prozent'),
    permille: suffix('Promille'),
    kmh: suffix('Kilometer pro Stunde'),
    squareMeters: suffix('Quadratmeter'),
    range: spaced('bis'),
    arrow: spaced('nach'),
    and: spaced('und'),
    fraction: spaced('durch'),
  },
  fr: {
    celsius: suffix('degrés Celsius'),
    fahrenheit: suffix('degrés Fahrenheit'),
    percent: suffix('pour cent'),
    permille: suffix('pour mille'),
    kmh: suffix('kilomètres par heure'),
    squareMeters: suffix('mètres carrés'),
    range: spaced('à'),
    arrow: spaced('vers'),
    and: spaced('et'),
    fraction: spaced('sur'),
  },
  ru: {
    celsius: suffix('градусов Цельсия'),
    fahrenheit: suffix('градусов по Фаренгейту'),
    percent: suffix('процентов'),
    permille: suffix('промилле'),
    kmh: suffix('километров в час'),
    squareMeters: suffix('квадратных метров'),
    range: spaced('до'),
    arrow: spaced('в'),
    and: spaced('и'),
    fraction: spaced('из'),
  },
  pt: {
    celsius: suffix('graus Celsius'),
    fahrenheit: suffix('graus Fahrenheit'),
    percent: suffix('por cento'),
    permille: suffix('por mil'),
    kmh: suffix('quilômetros por hora'),
    squareMeters: suffix('metros quadrados'),
    range: spaced('a'),
    arrow: spaced('para'),
    and: spaced('e'),
    fraction: spaced('sobre'),
  },
  es: {
    celsius: suffix('grados Celsius'),
    fahrenheit: suffix('grados Fahrenheit'),
    percent: suffix('por ciento'),
    permille: suffix('por mil'),
    kmh: suffix('kilómetros por hora'),
    squareMeters: suffix('metros cuadrados'),
    range: spaced('a'),
    arrow: spaced('a'),
    and: spaced('y'),
    fraction: spaced('sobre'),
  },
  it: {
    celsius: suffix('gradi Celsius'),
    fahrenheit: suffix('gradi Fahrenheit'),
    percent: suffix('per cento'),
    permille: suffix('per mille'),
    kmh: suffix('chilometri orari'),
    squareMeters: suffix('metri quadrati'),
    range: spaced('a'),
    arrow: spaced('verso'),
    and: spaced('e'),
    fraction: spaced('su'),
  },
};

/**
 * A number, matched only from the first digit of a run (the lookbehind): without it, a long run
 * of digits with no symbol after it would be tried from each of its digits, quadratic in its
 * length, and a model's (or a client's) long answer would hold the event loop for seconds.
 */
const NUMBER = String.raw`(?<!\d)(\d+(?:[.,]\d+)?)`;
/** A word or number on either side of a connecting symbol; the first one only from a word's start, as above. */
const SIDE = String.raw`([\p{L}\p{N}]+)`;
const FIRST_SIDE = String.raw`(?<![\p{L}\p{N}])${SIDE}`;

/** Each symbol's pattern and how the language says it, in the order they apply. */
const RULES: [RegExp, (spoken: SpokenLanguage, ...groups: string[]) => string][] = [
  [new RegExp(`${NUMBER}\\s*(?:°C|℃)`, 'gu'), (l, n) => l.celsius(n)],
  [new RegExp(`${NUMBER}\\s*(?:°F|℉)`, 'gu'), (l, n) => l.fahrenheit(n)],
  [new RegExp(`${NUMBER}\\s*[%％]`, 'gu'), (l, n) => l.percent(n)],
  [new RegExp(`${NUMBER}\\s*‰`, 'gu'), (l, n) => l.permille(n)],
  [new RegExp(`${NUMBER}\\s*(?:km/h|kph|公里/小时)`, 'giu'), (l, n) => l.kmh(n)],
  [new RegExp(`${NUMBER}\\s*(?:m²|㎡|平方米)`, 'gu'), (l, n) => l.squareMeters(n)],
  [new RegExp(`${NUMBER}\\s*[~～〜]\\s*${NUMBER}`, 'gu'), (l, a, b) => l.range(a, b)],
  [new RegExp(`${FIRST_SIDE}\\s*(?:→|->|⟶)\\s*${SIDE}`, 'gu'), (l, a, b) => l.arrow(a, b)],
  [new RegExp(`${FIRST_SIDE}\\s*&\\s*${SIDE}`, 'gu'), (l, a, b) => l.and(a, b)],
  [/(?<![\d/.])(\d+)\/(\d+)(?![\d/])/gu, (l, a, b) => l.fraction(a, b)],
];

/**
 * Symbols a text-to-speech engine misreads, as words of `language` (spec 5.2, 口语化): °C, °F,
 * %, ‰, km/h, m², `~` between numbers, `→`, `&` and `x/y` fractions. Digits stay digits: the
 * engine reads them in its own voice.
 */
export function toSpokenForms(text: string, language: LanguageCode): string {
  const spoken = LANGUAGES[language];
  let result = text;
  for (const [pattern, say] of RULES) result = result.replace(pattern, (_match, ...groups: string[]) => say(spoken, ...groups));
  return result;
}

/** The language a text is written in, as far as its script tells: CJK scripts, Cyrillic, else English. */
export function languageOfText(text: string): LanguageCode {
  if (/[\u3040-\u30ff]/.test(text)) return 'ja';
  if (/[\uac00-\ud7af]/.test(text)) return 'ko';
  if (/[\u3400-\u9fff]/.test(text)) return 'zh';
  if (/[\u0400-\u04ff]/.test(text)) return 'ru';
  return 'en';
}
