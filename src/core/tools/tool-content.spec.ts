import { textOfContent, ToolContentResult } from './tool-content';

describe('content results', () => {
  it('refuses content that is not a list of typed blocks', () => {
    expect(() => new ToolContentResult([{ text: 'no type' } as never])).toThrow(/string "type"/);
    expect(() => new ToolContentResult('text' as never)).toThrow(TypeError);
  });

  it('reads blocks as text for the model: text as is, media and links as short notes', () => {
    expect(
      textOfContent([
        { type: 'text', text: 'Here it is:' },
        { type: 'image', data: 'iVBOR', mimeType: 'image/png' },
        { type: 'audio', data: 'UklG' },
        { type: 'resource', resource: { uri: 'file:///notes.txt', text: 'Buy milk' } },
        { type: 'resource', resource: { uri: 'file:///photo.jpg', blob: 'AAAA' } },
        { type: 'resource_link', uri: 'file:///a.md', name: 'a.md' },
        { type: 'text', text: '' },
      ]),
    ).toBe('Here it is:\n[image image/png]\n[audio]\nBuy milk\n[resource file:///photo.jpg]\n[resource file:///a.md "a.md"]');
  });

  it('keeps a block of a kind it does not know as its JSON', () => {
    expect(textOfContent([{ type: 'chart', points: [1, 2] }])).toBe('{"type":"chart","points":[1,2]}');
  });
});
