import type { LanguageCode } from './languages';
import { stripHiddenText } from './hidden-text';
import { languageOfText, toSpokenForms } from './spoken-forms';

/**
 * Emoji, and the code points that join or modify them: skin tones, flags' regional letters,
 * zero-width joiners, variation selectors and keycaps. Removed one code point at a time.
 */
const EMOJI = /\p{Extended_Pictographic}|[\u{1F1E6}-\u{1F1FF}]|[\u{1F3FB}-\u{1F3FF}]|\u200D|\uFE0E|\uFE0F|\u20E3/gu;

/**
 * Decorative symbols a text-to-speech engine would spell out or stumble on: stars, shapes,
 * arrows, box drawing, check marks, bullets, musical notes. The Chinese name separator `·` and
 * ordinary punctuation are kept.
 */
const DECORATIONS = /[\u2190-\u21FF\u2500-\u25FF\u2600-\u27BF\u2B00-\u2BFF\u3010\u3011\u2022\u2023\u2043\u203B\u2605\u2606\u266A-\u266F\u2713-\u2718]/gu;

const TABLE_SEPARATOR = /^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$/;

function cleanLine(line: string, language: LanguageCode): string {
  let text = line;
  if (TABLE_SEPARATOR.test(text) || /^\s*([-*_])(\s*\1){2,}\s*$/.test(text)) return '';
  text = text
    .replace(/^\s{0,3}#{1,6}\s+/, '') // headings
    .replace(/^\s{0,3}>\s?/, '') // block quotes
    .replace(/^\s*[-*+]\s+(\[[ xX]\]\s+)?/, '') // bullets and task boxes; ordered numbers are words, kept
    // Images, links and autolinks: no part runs past the next bracket, so a line of unclosed
    // brackets costs a pass, not a pass per bracket.
    .replace(/!\[([^[\]]*)\]\([^()[\]]*\)/g, '$1') // images -> alt text
    .replace(/\[([^[\]]+)\]\([^()[\]]*\)/g, '$1') // links -> their text
    .replace(/<(https?:\/\/[^<>]+)>/g, '$1') // autolinks
    .replace(/`([^`]+)`/g, '$1') // inline code
    .replace(/(\*\*|__)(?=\S)([\s\S]*?\S)\1/g, '$2') // bold
    .replace(/(^|[^\w*])\*(?=\S)([^*]*?\S)\*(?![\w*])/g, '$1$2') // italics with *
    .replace(/(^|[^\w])_(?=\S)([^_]*?\S)_(?!\w)/g, '$1$2') // italics with _, not inside snake_case
    .replace(/~~(?=\S)([\s\S]*?\S)~~/g, '$1'); // strikethrough
  if (/^\s*\|.*\|\s*$/.test(text)) {
    text = text
      .trim()
      .replace(/^\||\|$/g, '')
      .split('|')
      .map((cell) => cell.trim())
      .filter(Boolean)
      .join(', ');
  }
  return toSpokenForms(text, language)
    .replace(EMOJI, '')
    .replace(DECORATIONS, '')
    .replace(/[ \t]{2,}/g, ' ')
    .trim();
}

/**
 * Makes a model's answer fit for a text-to-speech engine (LLM gateway spec 5.2): reasoning and
 * leaked tool-call markup, emoji, decorative symbols and Markdown syntax (emphasis, headings,
 * lists, links, images, code fences and inline code, tables, quotes, rules) are removed; symbols
 * an engine misreads (°C, %, ~, →...) become words of `language` (by default, the language the
 * text is written in); the words stay.
 */
export function cleanForSpeech(text: string, language: LanguageCode = languageOfText(text)): string {
  const lines = stripHiddenText(text)
    .replace(/^\s*(```|~~~)[^\n]*$/gm, '') // code fence markers; the code inside is kept
    .split(/\r?\n/)
    .map((line) => cleanLine(line, language));
  return lines
    .join('\n')
    .replace(/\n{2,}/g, '\n')
    .trim();
}
