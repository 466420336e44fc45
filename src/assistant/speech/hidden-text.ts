/**
 * Text a model writes that is not for the listener: reasoning (`<think>...</think>`, Qwen3 and
 * DeepSeek-style models, even with thinking off on some servers) and tool-call markup some
 * models leak into their text instead of real tool calls. Tags are matched without regard to case.
 */
const HIDDEN_SPANS: readonly { open: string; close: string }[] = [
  { open: '<think>', close: '</think>' },
  { open: '<tool_call>', close: '</tool_call>' },
  { open: '<|functioncallbegin|>', close: '<|functioncallend|>' },
  { open: '<|tool▁calls▁begin|>', close: '<|tool▁calls▁end|>' },
];

const REASONING_CLOSE = '</think>';

/**
 * Takes a model's text as it streams and passes on what may be spoken: hidden spans are dropped
 * as they come, across chunk boundaries (a tag split over two chunks is held back until it can
 * be told), and a span left open at the end is dropped whole. A lone `</think>` (servers that
 * strip the opening tag) means that everything before it was reasoning: {@link push} reports
 * it, so text not yet spoken can be dropped; what was spoken already cannot be taken back.
 */
export class HiddenTextFilter {
  private pending = '';
  /** The closing tag of the span being dropped, if inside one. */
  private closing?: string;

  /** The visible text in `chunk`; `reasoningEnded` when a lone `</think>` said that all before it was reasoning. */
  push(chunk: string): { visible: string; reasoningEnded: boolean } {
    this.pending += chunk;
    let visible = '';
    let reasoningEnded = false;
    for (;;) {
      const lower = this.pending.toLowerCase();
      if (this.closing) {
        const end = lower.indexOf(this.closing);
        if (end < 0) {
          // Keep only what could still be the start of the closing tag.
          this.pending = this.pending.slice(Math.max(0, this.pending.length - (this.closing.length - 1)));
          break;
        }
        this.pending = this.pending.slice(end + this.closing.length);
        this.closing = undefined;
        continue;
      }
      const next = this.nextTag(lower);
      if (!next) {
        const keep = heldBack(lower);
        visible += this.pending.slice(0, this.pending.length - keep);
        this.pending = this.pending.slice(this.pending.length - keep);
        break;
      }
      visible += this.pending.slice(0, next.at);
      this.pending = this.pending.slice(next.at + next.tag.length);
      if (next.tag === REASONING_CLOSE) {
        reasoningEnded = true;
        visible = '';
      } else {
        this.closing = next.close;
      }
    }
    return { visible, reasoningEnded };
  }

  /** The end of the text: what was held back, unless it is an unfinished span. */
  end(): string {
    const rest = this.closing ? '' : this.pending;
    this.pending = '';
    this.closing = undefined;
    return rest;
  }

  private nextTag(lower: string): { at: number; tag: string; close?: string } | undefined {
    let found: { at: number; tag: string; close?: string } | undefined;
    for (const { open, close } of HIDDEN_SPANS) {
      const at = lower.indexOf(open);
      if (at >= 0 && (!found || at < found.at)) found = { at, tag: open, close };
    }
    const lone = lower.indexOf(REASONING_CLOSE);
    if (lone >= 0 && (!found || lone < found.at)) found = { at: lone, tag: REASONING_CLOSE };
    return found;
  }
}

/** How many characters at the end of `lower` might be the start of a tag, and so wait for more. */
function heldBack(lower: string): number {
  const start = lower.lastIndexOf('<');
  if (start < 0) return 0;
  const tail = lower.slice(start);
  const tags = [...HIDDEN_SPANS.map((span) => span.open), REASONING_CLOSE];
  return tags.some((tag) => tag.startsWith(tail) && tail.length < tag.length) ? tail.length : 0;
}

/** A whole text without its hidden spans (see {@link HiddenTextFilter}), trimmed. */
export function stripHiddenText(text: string): string {
  const filter = new HiddenTextFilter();
  return (filter.push(text).visible + filter.end()).trim();
}
