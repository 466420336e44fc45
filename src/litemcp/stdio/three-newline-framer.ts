import { StringDecoder } from 'string_decoder';

/** A request ends at three consecutive newlines (`\r\n` counts as a newline). */
const TERMINATOR = /\r?\n\r?\n\r?\n/;

export interface FramerEvents {
  frame(text: string): void;
  /** A request grew past the limit before its terminator; it was dropped up to the terminator. */
  oversized(bytes: number): void;
}

/**
 * Splits LiteMCP's stdio stream into requests. Bounded: text without a terminator is kept up to
 * `limitBytes`; past that the request is discarded as it streams in, and reported once its
 * terminator arrives, so a runaway client cannot grow the buffer without end.
 */
export class ThreeNewlineFramer {
  private readonly decoder = new StringDecoder('utf8');
  private pending = '';
  private discardedBytes = 0;

  constructor(
    private readonly limitBytes: number,
    private readonly events: FramerEvents,
  ) {}

  push(chunk: Buffer | string): void {
    this.pending += typeof chunk === 'string' ? chunk : this.decoder.write(chunk);
    for (let match = TERMINATOR.exec(this.pending); match; match = TERMINATOR.exec(this.pending)) {
      const text = this.pending.slice(0, match.index);
      this.pending = this.pending.slice(match.index + match[0].length);
      if (this.discardedBytes > 0) {
        this.events.oversized(this.discardedBytes + Buffer.byteLength(text));
        this.discardedBytes = 0;
      } else if (Buffer.byteLength(text) > this.limitBytes) {
        this.events.oversized(Buffer.byteLength(text));
      } else if (text.trim() !== '') {
        this.events.frame(text);
      }
    }
    // Keep a short tail: it may hold the start of a terminator split across chunks.
    if (Buffer.byteLength(this.pending) > this.limitBytes) {
      const tail = this.pending.slice(-5);
      this.discardedBytes += Buffer.byteLength(this.pending) - Buffer.byteLength(tail);
      this.pending = tail;
    }
  }

  /** End of input: a last request without its terminator is still served. */
  end(): void {
    this.pending += this.decoder.end();
    const text = this.pending;
    this.pending = '';
    if (this.discardedBytes > 0) this.events.oversized(this.discardedBytes + Buffer.byteLength(text));
    else if (text.trim() !== '') this.events.frame(text);
    this.discardedBytes = 0;
  }
}
