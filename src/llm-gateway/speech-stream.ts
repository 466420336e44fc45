import type { LanguageCode } from './protocol';
import { HiddenTextFilter } from '../assistant/speech/hidden-text';
import { SentenceSplitter } from '../assistant/speech/sentence-splitter';

/**
 * A turn's text on its way to the listener: the model's deltas -> reasoning and tool-call
 * markup removed -> cut into sentences -> `say`, one sentence at a time, as soon as it is
 * complete (cleaning for speech comes after, in `SpeechCleaningInterceptor`). What was said,
 * joined, is {@link spoken}: each sentence after the first keeps one space (or line break) from
 * the text between them, so the joined sentences read as the answer does.
 */
export class SpeechStream {
  private filter = new HiddenTextFilter();
  private splitter = new SentenceSplitter();
  private readonly said: string[] = [];
  /** The next sentence starts a new reply (after a tool round) or follows the gateway's own: it is spaced from the last. */
  private separate = false;

  constructor(
    private readonly language: LanguageCode,
    private readonly say: (sentence: string) => void,
  ) {}

  /** Whether the language writes sentences without spaces between them. */
  private get unspaced(): boolean {
    return this.language === 'zh' || this.language === 'ja';
  }

  /** Sentences said so far, joined. */
  get spoken(): string {
    return this.said.join('');
  }

  /** A delta of the model's text. */
  write(delta: string): void {
    const { visible, reasoningEnded } = this.filter.push(delta);
    // Everything before a lone `</think>` was reasoning: drop what was not said yet.
    if (reasoningEnded) this.splitter = new SentenceSplitter();
    for (const piece of this.splitter.push(visible)) this.speak(piece);
  }

  /** The model's reply is over (a tool round or the answer follows): say what is left of it. */
  flush(): void {
    const rest = this.filter.end();
    const pieces = [...this.splitter.push(rest), ...this.splitter.end()];
    this.filter = new HiddenTextFilter();
    for (const piece of pieces) this.speak(piece);
    this.separate = true;
  }

  /** A sentence of the gateway's own (a filler while tools run). */
  interject(sentence: string): void {
    this.separate = true;
    this.speak(sentence);
    this.separate = true;
  }

  private speak(piece: string): void {
    const text = piece.trim();
    // Nothing to say: punctuation alone (a closing quote split from its sentence).
    if (!/[\p{L}\p{N}]/u.test(text)) return;
    const lead = this.said.length === 0 ? '' : /^\s*\n/.test(piece) ? '\n' : /^\s/.test(piece) || (this.separate && !this.unspaced) ? ' ' : '';
    this.separate = false;
    const sentence = lead + text;
    this.said.push(sentence);
    this.say(sentence);
  }
}
