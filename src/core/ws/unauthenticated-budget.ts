const NOTHING = Buffer.alloc(0);

/**
 * The bytes of the frame whose header starts at `at` (header and payload, as the header
 * announces them), or undefined while its header has not arrived whole.
 */
function frameSize(bytes: Buffer, at: number): number | undefined {
  if (bytes.length - at < 2) return undefined;
  const second = bytes[at + 1];
  const short = second & 0x7f;
  const header = 2 + (short === 126 ? 2 : short === 127 ? 8 : 0) + (second & 0x80 ? 4 : 0);
  if (bytes.length - at < header) return undefined;
  // A 64-bit length past 2^53 loses precision as a number, but stays far over any budget.
  const payload = short === 126 ? bytes.readUInt16BE(at + 2) : short === 127 ? Number(bytes.readBigUInt64BE(at + 2)) : short;
  return header + payload;
}

/**
 * What a socket may send before it authenticates (`WS_UNAUTHENTICATED_MAX_BYTES`), read off the
 * network ahead of `ws`, frame header by frame header: a frame whose header announces that it
 * would end past the budget is refused there, before its payload is read, so a socket announcing
 * an unfinished 16 MB frame costs the gateway the read that brought its header, not the budget
 * and a read past it. `ws` still parses the frames; this only walks their headers, so it must see
 * every byte of the stream once and in order, the upgrade's `head` included (`ws` puts it back on
 * the socket before the upgrade's callback).
 */
export class UnauthenticatedBudget {
  private received = 0;
  /** Where in the stream the next frame header starts. */
  private nextHeader = 0;
  /** The first bytes (under 14) of a header split across reads, copied: a read's buffer is not kept for them. */
  private partial = NOTHING;

  constructor(readonly limit: number) {}

  /** Counts `chunk`, the next bytes read; false once the stream has gone, or a frame says it will go, past the budget. */
  admits(chunk: Buffer): boolean {
    const bytes = this.partial.length > 0 ? Buffer.concat([this.partial, chunk]) : chunk;
    const offset = this.received - this.partial.length;
    this.received += chunk.length;
    this.partial = NOTHING;
    if (this.received > this.limit) return false;
    while (this.nextHeader < this.received) {
      const size = frameSize(bytes, this.nextHeader - offset);
      if (size === undefined) {
        this.partial = Buffer.from(bytes.subarray(this.nextHeader - offset));
        return true;
      }
      this.nextHeader += size;
      if (this.nextHeader > this.limit) return false;
    }
    return true;
  }
}
