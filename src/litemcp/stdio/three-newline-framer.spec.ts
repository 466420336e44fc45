import { ThreeNewlineFramer } from './three-newline-framer';

describe('ThreeNewlineFramer', () => {
  const collect = (limit = 1024) => {
    const frames: string[] = [];
    const oversized: number[] = [];
    const framer = new ThreeNewlineFramer(limit, { frame: (t) => frames.push(t), oversized: (b) => oversized.push(b) });
    return { framer, frames, oversized };
  };

  it('splits at three newlines, pretty-printed JSON included', () => {
    const { framer, frames } = collect();
    framer.push('{\n  "id": 1\n}\n\n\n{"id": 2}\n\n\n');
    expect(frames).toEqual(['{\n  "id": 1\n}', '{"id": 2}']);
  });

  it('joins requests split across chunks, terminators and UTF-8 characters included', () => {
    const { framer, frames } = collect();
    const bytes = Buffer.from('{"text":"héllo"}\n\n\n');
    for (const byte of bytes) framer.push(Buffer.from([byte]));
    expect(frames).toEqual(['{"text":"héllo"}']);
  });

  it('accepts CRLF line ends and skips blank requests', () => {
    const { framer, frames } = collect();
    framer.push('\n\n\n{"a":1}\r\n\r\n\r\n   \n\n\n');
    expect(frames).toEqual(['{"a":1}']);
  });

  it('serves a last request that EOF ends instead of a terminator', () => {
    const { framer, frames } = collect();
    framer.push('{"a":1}\n\n\n{"b":2}\n');
    framer.end();
    expect(frames).toEqual(['{"a":1}', '{"b":2}\n']);
  });

  it('drops an oversized request as it streams in, reports it, and goes on', () => {
    const { framer, frames, oversized } = collect(64);
    framer.push('x'.repeat(50));
    framer.push('x'.repeat(50));
    framer.push('x'.repeat(50) + '\n\n\n{"ok":true}\n\n\n');
    expect(oversized).toEqual([150]);
    expect(frames).toEqual(['{"ok":true}']);
  });

  it('reports a complete request over the limit', () => {
    const { framer, frames, oversized } = collect(8);
    framer.push('{"long":"value"}\n\n\n');
    expect(frames).toEqual([]);
    expect(oversized).toEqual([16]);
  });
});
