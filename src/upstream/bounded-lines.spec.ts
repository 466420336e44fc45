import { BoundedLineSplitter, OversizedLine } from './bounded-lines';

function splitter(maxBytes: number) {
  const lines: string[] = [];
  const oversized: OversizedLine[] = [];
  const split = new BoundedLineSplitter(
    maxBytes,
    (line) => lines.push(line.toString()),
    (line) => oversized.push(line),
  );
  return { split, lines, oversized };
}

describe('BoundedLineSplitter', () => {
  it('gives each line, whatever the chunks, blank lines included', () => {
    const { split, lines } = splitter(100);
    for (const chunk of ['{"a":', '1}\n\n{"b"', ':2}\r\n{"c":3}\n']) split.push(Buffer.from(chunk));
    expect(lines).toEqual(['{"a":1}', '', '{"b":2}\r', '{"c":3}']);
  });

  it('reads a line past the bound through without holding it, reports its size and ends, and goes on with the next', () => {
    const { split, lines, oversized } = splitter(10);
    const big = `HEAD${'x'.repeat(5000)}TAIL`;
    split.push(Buffer.from('short\n' + big.slice(0, 7)));
    expect(split.overflowing).toBe(false);
    for (let at = 7; at < big.length; at += 100) {
      split.push(Buffer.from(big.slice(at, at + 100)));
      expect(split.overflowing).toBe(true);
    }
    split.push(Buffer.from('\nafter\n'));

    expect(lines).toEqual(['short', 'after']);
    expect(oversized).toHaveLength(1);
    expect(oversized[0].bytes).toBe(big.length);
    expect(oversized[0].head.toString()).toBe(big.slice(0, 1024));
    expect(oversized[0].tail.toString()).toBe(big.slice(-1024));
    expect(split.overflowing).toBe(false);
  });

  it('keeps the ends of a line that overflows within one chunk', () => {
    const { split, oversized } = splitter(4);
    split.push(Buffer.from('0123456789\n'));
    expect(oversized).toEqual([{ bytes: 10, head: Buffer.from('0123456789'), tail: Buffer.from('0123456789') }]);
  });

  it('forgets an unfinished line when cleared', () => {
    const { split, lines } = splitter(100);
    split.push(Buffer.from('{"half":'));
    split.clear();
    split.push(Buffer.from('{"whole":1}\n'));
    expect(lines).toEqual(['{"whole":1}']);
  });
});
