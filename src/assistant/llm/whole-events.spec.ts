import { wholeEvents } from './whole-events';

async function recut(reads: string[]): Promise<string[]> {
  async function* body() {
    for (const read of reads) yield Buffer.from(read);
  }
  const pieces: string[] = [];
  for await (const piece of wholeEvents(body())) pieces.push(piece.toString());
  return pieces;
}

describe('wholeEvents', () => {
  const stream = 'data: {"a":1}\n\ndata: {"b":2}\r\n\r\n: comment\ndata: {"c":3}\n\ndata: [DONE]\n\n';
  const events = ['data: {"a":1}\n\n', 'data: {"b":2}\r\n\r\n', ': comment\ndata: {"c":3}\n\n', 'data: [DONE]\n\n'];

  it('cuts a burst of events read at once into one piece per event', async () => {
    expect(await recut([stream])).toEqual(events);
  });

  it('joins an event read in many pieces, wherever the reads were cut, even inside a delimiter', async () => {
    for (let cut = 1; cut < stream.length; cut++) {
      expect(await recut([stream.slice(0, cut), stream.slice(cut)])).toEqual(events);
    }
    expect(await recut([...stream])).toEqual(events);
  });

  it('passes on the unfinished end of a stream that stops mid-event', async () => {
    expect(await recut(['data: {"a":1}\n\ndata: {"b"', ':2'])).toEqual(['data: {"a":1}\n\n', 'data: {"b":2']);
  });

  it('passes a stream of lines ended by carriage returns alone through whole, in the pieces it came in', async () => {
    expect(await recut(['data: 1\r\rdata: 2\r\r'])).toEqual(['data: 1\r\rdata: 2\r\r']);
  });

  it('cuts a long burst, 100,000 events in one read, into 100,000 pieces', async () => {
    const burst = 'data: {"choices":[{"delta":{"content":"x"}}]}\n\n'.repeat(100_000);
    const pieces = await recut([burst]);
    expect(pieces).toHaveLength(100_000);
    expect(pieces.join('')).toBe(burst);
  });
});
