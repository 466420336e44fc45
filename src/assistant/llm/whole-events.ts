const LF = 0x0a;
const CR = 0x0d;

/**
 * A model's event stream re-cut so that each piece handed to `openai` is one whole event.
 *
 * `openai` 6.48 (the last release for Node 20) copies what is left of a read once per event in
 * it, and the whole of an unfinished event once per read that adds to it: a burst of events in
 * one read (a server that buffers, a fast local model) or one long event over many reads costs
 * CPU quadratic in its size (a 500 KB answer took 2 s of one core, most of it in
 * `iterSSEChunks`). Given whole events, both copies are linear. Fixed upstream in
 * openai-node#2324, in releases that need a newer Node.
 *
 * Events end at an empty line (`\n\n` or `\r\n\r\n`); a stream that ends lines with `\r` alone
 * is passed through in the pieces it came in, which `openai` still reads right, only slower.
 */
export async function* wholeEvents(body: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  const unfinished: Buffer[] = [];
  /** The last three bytes before the current read, nearest last: a delimiter may straddle reads. */
  let before = [0, 0, 0];
  for await (const read of body) {
    const byteAt = (index: number) => (index >= 0 ? read[index] : before[3 + index]);
    let start = 0;
    for (let end = read.indexOf(LF); end !== -1; end = read.indexOf(LF, end + 1)) {
      const previous = byteAt(end - 1);
      if (previous !== LF && !(previous === CR && byteAt(end - 2) === LF && byteAt(end - 3) === CR)) continue;
      const tail = read.subarray(start, end + 1);
      if (unfinished.length === 0) yield tail;
      else {
        unfinished.push(tail);
        yield Buffer.concat(unfinished.splice(0));
      }
      start = end + 1;
    }
    if (start < read.length) unfinished.push(read.subarray(start));
    before = [byteAt(read.length - 3), byteAt(read.length - 2), byteAt(read.length - 1)];
  }
  if (unfinished.length > 0) yield Buffer.concat(unfinished);
}
