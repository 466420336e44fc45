/** Ends a sentence wherever it stands: Chinese and Japanese full-width punctuation. */
const CJK_END = new Set(['。', '！', '？', '；', '…', '．']);
/** Ends a sentence when whitespace (or the end of the text) follows. */
const WESTERN_END = new Set(['.', '!', '?', ';']);
/** May close a sentence after its end punctuation: quotes and brackets. */
const CLOSERS = new Set(['"', "'", '”', '’', '」', '』', '）', ')', ']', '】', '》', '>']);
/** Where an overlong sentence, or an early first piece, may be cut. */
const CJK_COMMAS = new Set(['，', '、', '：']);
const WESTERN_COMMAS = new Set([',', ':']);

/** Words whose period does not end a sentence. */
const ABBREVIATIONS = new Set([
  'mr',
  'mrs',
  'ms',
  'dr',
  'prof',
  'sr',
  'jr',
  'st',
  'vs',
  'etc',
  'e.g',
  'i.e',
  'no',
  'fig',
  'approx',
  'inc',
  'ltd',
  'co',
  'u.s',
  'a.m',
  'p.m',
  'mt',
  'ft',
  'dept',
  'est',
  'cf',
]);

const CJK_CHAR = /[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uff00-\uffef]/;
const isSpace = (char: string) => char === ' ' || char === '\t' || char === '\n' || char === '\r' || char === '\u3000';

export interface SentenceSplitterOptions {
  /** Characters after which a sentence is cut at its last comma, space, or where it stands. */
  maxChars?: number;
  /** The first piece may end at a comma once it has this many characters, to start speech early; 0 never. */
  firstClauseChars?: number;
}

/**
 * Cuts a model's text into sentences as it streams, for text-to-speech: at Chinese and Western
 * end punctuation and at line breaks, never inside a number (3.14), after a common
 * abbreviation (Dr., e.g.) or an initial, after a list number (1.), or inside a URL or a word
 * (Western punctuation ends a sentence only when whitespace follows). A sentence over
 * `maxChars` is cut at its last comma-class boundary; the first piece may end at a comma once
 * it is `firstClauseChars` long. The pieces, joined, are the text: each keeps the whitespace
 * before it, so nothing is lost between them.
 */
export class SentenceSplitter {
  private buffer = '';
  /** How much of the buffer's start is known to be whitespace: not scanned again at each push. */
  private leadingSpace = 0;
  /**
   * Whitespace that came before the next piece, set aside: a buffer of nothing but whitespace
   * grown by one push after another would be copied whole at each push (appending makes a
   * chain of strings, reading a character of it flattens the chain), so it waits here, joined
   * once when its piece is taken.
   */
  private readonly heldSpace: string[] = [];
  private pieces = 0;
  private readonly maxChars: number;
  private readonly firstClauseChars: number;

  constructor(options: SentenceSplitterOptions = {}) {
    this.maxChars = options.maxChars ?? 120;
    this.firstClauseChars = options.firstClauseChars ?? 12;
  }

  /** The sentences `text` completes, in order. */
  push(text: string): string[] {
    this.buffer += text;
    const out: string[] = [];
    for (;;) {
      const end = this.findEnd(false);
      if (end === undefined) break;
      out.push(this.take(end));
    }
    return out;
  }

  /** The end of the text: whatever is left, as the last pieces. */
  end(): string[] {
    const out: string[] = [];
    for (;;) {
      const end = this.findEnd(true);
      if (end === undefined) break;
      out.push(this.take(end));
    }
    if (this.buffer.trim()) out.push(this.take(this.buffer.length));
    this.buffer = '';
    this.leadingSpace = 0;
    this.heldSpace.length = 0;
    return out;
  }

  private take(end: number): string {
    const piece = this.heldSpace.length > 0 ? this.heldSpace.splice(0).join('') + this.buffer.slice(0, end) : this.buffer.slice(0, end);
    this.buffer = this.buffer.slice(end);
    this.leadingSpace = 0;
    this.pieces += 1;
    return piece;
  }

  /**
   * Where the first complete piece of the buffer ends, if one does; `final` when no more text
   * comes. Scans from the piece's start each time: a piece is at most `maxChars` long.
   */
  private findEnd(final: boolean): number | undefined {
    const text = this.buffer;
    let start = this.leadingSpace;
    while (start < text.length && isSpace(text[start])) start++;
    if (start === text.length && start > 0) {
      this.heldSpace.push(text);
      this.buffer = '';
      this.leadingSpace = 0;
      return undefined;
    }
    this.leadingSpace = start;
    let lastComma = -1;
    let lastSpace = -1;
    for (let i = start; i < text.length; i++) {
      const char = text[i];
      if (char === '\n') {
        if (i > start) return i;
        continue;
      }
      if (CJK_END.has(char) || WESTERN_END.has(char)) {
        let after = i + 1;
        while (after < text.length && (CJK_END.has(text[after]) || WESTERN_END.has(text[after]))) after++;
        while (after < text.length && CLOSERS.has(text[after])) after++;
        const verdict = this.decide(text, start, i, after, final);
        if (verdict === 'wait') return undefined;
        if (verdict === 'end') return after;
        i = after - 1;
        continue;
      }
      const length = i - start + 1;
      if (CJK_COMMAS.has(char) || (WESTERN_COMMAS.has(char) && (i + 1 >= text.length ? final : isSpace(text[i + 1])))) {
        lastComma = i + 1;
        if (this.pieces === 0 && this.firstClauseChars > 0 && length >= this.firstClauseChars) return lastComma;
      } else if (isSpace(char)) {
        lastSpace = i;
      }
      if (length >= this.maxChars) return lastComma > start ? lastComma : lastSpace > start ? lastSpace : i + 1;
    }
    return undefined;
  }

  /**
   * Whether punctuation at `at` (its run ending at `after`) ends the sentence that began at
   * `start`, or whether that can only be told from what comes next. At the end of the text so
   * far, a sentence ends at once where it plainly does (CJK punctuation; Western punctuation
   * after a word that is no abbreviation, initial or URL), so it is spoken as soon as its last
   * token arrives; a period after a digit (3.14?) or a run of dots (an ellipsis?) waits.
   */
  private decide(text: string, start: number, at: number, after: number, final: boolean): 'end' | 'no' | 'wait' {
    const char = text[at];
    if (CJK_END.has(char)) return 'end';
    const word = /\S*$/u.exec(text.slice(start, at))?.[0] ?? '';
    if (/:\/\/|^www\.|@/i.test(word)) return after >= text.length && !final ? 'wait' : isSpace(text[after] ?? ' ') ? 'end' : 'no';
    const next = text[after];
    if (next === undefined) {
      if (final) return this.periodEnds(text, start, at, after) ? 'end' : 'no';
      if (char !== '.') return 'end';
      if (after - at > 1 || /\d$/.test(word)) return 'wait';
      return this.periodEnds(text, start, at, after) ? 'end' : 'no';
    }
    if (!isSpace(next) && !CJK_CHAR.test(next)) return 'no';
    return this.periodEnds(text, start, at, after) ? 'end' : 'no';
  }

  /** Whether a period ends its sentence: not after a list number, an initial or an abbreviation. */
  private periodEnds(text: string, start: number, at: number, after: number): boolean {
    if (text[at] !== '.' || after - at > 1) return true;
    const word = /[\p{L}\p{N}.]*$/u.exec(text.slice(start, at))?.[0] ?? '';
    if (/^\d+$/.test(text.slice(start, at).trim())) return false; // a list number: "1."
    if (/^\p{Lu}$/u.test(word)) return false; // an initial: "J. K."
    return !ABBREVIATIONS.has(word.toLowerCase());
  }
}
