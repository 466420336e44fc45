/** Bytes kept of each end of a line too long to hold: enough for the JSON-RPC members that say what it answers. */
const KEPT_END_BYTES = 1024;

const NEWLINE = 0x0a;

/** A line that was read through without being held: its length and its two ends. */
export interface OversizedLine {
  bytes: number;
  head: Buffer;
  tail: Buffer;
}

/** The first `length` bytes of `pieces` together, as a buffer of their own. */
function firstBytes(pieces: Buffer[], length: number): Buffer {
  const taken: Buffer[] = [];
  let left = length;
  for (const piece of pieces) {
    if (left === 0) break;
    taken.push(piece.subarray(0, left));
    left -= taken[taken.length - 1].length;
  }
  return Buffer.concat(taken);
}

/** The last `length` bytes of `first` followed by `second`, as a buffer of their own. */
function lastBytes(first: Buffer, second: Buffer, length: number): Buffer {
  if (second.length >= length) return Buffer.from(second.subarray(second.length - length));
  return Buffer.concat([first.subarray(Math.max(0, first.length - (length - second.length))), second]);
}

/**
 * Splits a byte stream into `\n`-ended lines of at most `maxBytes`, as stdio and event streams
 * frame JSON-RPC messages. A line is held only while it is within the bound; a longer one is
 * read on to its end without being kept (only its first and last kilobyte), then reported, so
 * one oversized message costs the bound and never desynchronises the lines after it.
 *
 * Written here rather than taken from a splitter package (`split2` skips or fails an overlong
 * line without saying what it was): the ends of the dropped line tell which call it answered.
 */
export class BoundedLineSplitter {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private oversized?: OversizedLine;

  constructor(
    private readonly maxBytes: number,
    private readonly onLine: (line: Buffer) => void,
    private readonly onOversized: (line: OversizedLine) => void,
  ) {}

  /** Whether the line being read is already over the bound. */
  get overflowing(): boolean {
    return this.oversized !== undefined;
  }

  push(chunk: Buffer): void {
    let start = 0;
    while (start < chunk.length) {
      const end = chunk.indexOf(NEWLINE, start);
      this.take(chunk.subarray(start, end === -1 ? chunk.length : end));
      if (end === -1) return;
      this.endLine();
      start = end + 1;
    }
  }

  /** Forgets a line left unfinished. */
  clear(): void {
    this.pending = [];
    this.pendingBytes = 0;
    this.oversized = undefined;
  }

  private take(piece: Buffer): void {
    if (piece.length === 0) return;
    const { oversized } = this;
    if (oversized) {
      oversized.bytes += piece.length;
      const headRoom = KEPT_END_BYTES - oversized.head.length;
      if (headRoom > 0) oversized.head = Buffer.concat([oversized.head, piece.subarray(0, headRoom)]);
      oversized.tail = lastBytes(oversized.tail, piece, KEPT_END_BYTES);
      return;
    }
    if (this.pendingBytes + piece.length <= this.maxBytes) {
      this.pending.push(piece);
      this.pendingBytes += piece.length;
      return;
    }
    const pieces = [...this.pending, piece];
    this.oversized = {
      bytes: this.pendingBytes + piece.length,
      head: firstBytes(pieces, KEPT_END_BYTES),
      tail: pieces.reduce((tail, next) => lastBytes(tail, next, KEPT_END_BYTES), Buffer.alloc(0)),
    };
    this.pending = [];
    this.pendingBytes = 0;
  }

  private endLine(): void {
    const { oversized } = this;
    if (oversized) {
      this.oversized = undefined;
      this.onOversized(oversized);
      return;
    }
    const line = this.pending.length === 1 ? this.pending[0] : Buffer.concat(this.pending);
    this.pending = [];
    this.pendingBytes = 0;
    this.onLine(line);
  }
}
