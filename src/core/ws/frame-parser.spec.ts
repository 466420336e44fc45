import { FrameEvent, parseFrame } from './frame-parser';

describe('parseFrame', () => {
  it('routes a JSON object on its type', () => {
    expect(parseFrame('{"type":"call","id":1}')).toEqual({ event: 'call', data: { type: 'call', id: 1 } });
    expect(parseFrame(Buffer.from('{"type":"get"}'))).toEqual({ event: 'get', data: { type: 'get' } });
  });

  it('reports text that is not JSON', () => {
    expect(parseFrame('{oops')).toEqual({ event: FrameEvent.MALFORMED, data: { reason: expect.stringMatching(/^Invalid JSON/) } });
  });

  it.each([['[1,2]'], ['42'], ['null'], ['"text"'], ['{"type":7}'], ['{"jsonrpc":"2.0"}']])('reports %s as untyped', (text) => {
    expect(parseFrame(text).event).toBe(FrameEvent.UNTYPED);
  });

  it('never routes a client-chosen type to an internal event', () => {
    expect(parseFrame('{"type":"#malformed"}').event).toBe(FrameEvent.UNKNOWN_TYPE);
  });

  it('reports frames over the limit without parsing them, counting bytes not characters', () => {
    expect(parseFrame('{"type":"x","pad":"' + 'a'.repeat(100) + '"}', 64)).toEqual({
      event: FrameEvent.TOO_LARGE,
      data: { bytes: 121, limit: 64 },
    });
    const accents = JSON.stringify({ type: 'x', text: 'é'.repeat(30) });
    expect(parseFrame(accents, 80).event).toBe(FrameEvent.TOO_LARGE);
    expect(parseFrame(accents, 100).event).toBe('x');
  });
});
