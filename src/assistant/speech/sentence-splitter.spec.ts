import { SentenceSplitter } from './sentence-splitter';

/** Feeds `text` in pieces of `size` characters, as a model streams; the pieces, then the rest at the end. */
function split(text: string, size = 3, options?: ConstructorParameters<typeof SentenceSplitter>[0]): string[] {
  const splitter = new SentenceSplitter({ firstClauseChars: 0, ...options });
  const pieces: string[] = [];
  for (let i = 0; i < text.length; i += size) pieces.push(...splitter.push(text.slice(i, i + size)));
  return [...pieces, ...splitter.end()];
}

describe('SentenceSplitter', () => {
  it.each([
    [
      'Western end punctuation followed by a space',
      'It is sunny. Take a hat! Why not? Yes; fine.',
      ['It is sunny.', ' Take a hat!', ' Why not?', ' Yes;', ' fine.'],
    ],
    [
      'Chinese end punctuation, with no space needed',
      '今天晴。明天有雨！要带伞吗？带上吧；好的…',
      ['今天晴。', '明天有雨！', '要带伞吗？', '带上吧；', '好的…'],
    ],
    ['line breaks', 'First line\nSecond line\n\nThird', ['First line', '\nSecond line', '\n\nThird']],
    ['a number with a decimal point', 'Pi is 3.14 and e is 2.71. Done.', ['Pi is 3.14 and e is 2.71.', ' Done.']],
    ['abbreviations and initials', 'Dr. Smith met J. K. Rowling, e.g. at noon. Then left.', ['Dr. Smith met J. K. Rowling, e.g. at noon.', ' Then left.']],
    ['a list number', '1. Preheat the oven. 2. Bake.', ['1. Preheat the oven.', ' 2. Bake.']],
    ['a URL', 'See https://example.com/a.b?c=1 for more. Thanks.', ['See https://example.com/a.b?c=1 for more.', ' Thanks.']],
    ['closing quotes and an ellipsis', '他说：“好。”然后走了。Wait... really?" Yes.', ['他说：“好。”', '然后走了。', 'Wait...', ' really?"', ' Yes.']],
  ])('cuts at %s', (_name, text, sentences) => {
    expect(split(text, text.length)).toEqual(sentences);
    for (const size of [1, 3]) expect(split(text, size).join('')).toBe(text);
  });

  it('ends a sentence as soon as its last token comes, where the punctuation plainly ends it', () => {
    const splitter = new SentenceSplitter({ firstClauseChars: 0 });
    expect(splitter.push('It is sunny')).toEqual([]);
    expect(splitter.push('.')).toEqual(['It is sunny.']);
    expect(splitter.push(' 你好')).toEqual([]);
    expect(splitter.push('。')).toEqual([' 你好。']);
    expect(splitter.push(' Really')).toEqual([]);
    expect(splitter.push('?')).toEqual([' Really?']);
  });

  it('waits for the next character where it cannot tell yet: a number, an ellipsis, a URL', () => {
    const splitter = new SentenceSplitter({ firstClauseChars: 0 });
    expect(splitter.push('It costs 3.')).toEqual([]);
    expect(splitter.push('5 euros. Well..')).toEqual(['It costs 3.5 euros.']);
    expect(splitter.push('. See https://example.com/a?')).toEqual([' Well...']);
    expect(splitter.push('b=1 now.')).toEqual([' See https://example.com/a?b=1 now.']);
    expect(splitter.push(' Dr.')).toEqual([]);
    expect(splitter.end()).toEqual([' Dr.']);
  });

  it('cuts an overlong sentence at its last comma, else a space', () => {
    const long = 'one, two, three, four, five, six, seven, eight, nine, ten, eleven, twelve';
    const pieces = split(long, 5, { maxChars: 30 });
    expect(pieces.every((piece) => piece.length <= 30)).toBe(true);
    expect(pieces[0]).toBe('one, two, three, four, five,');
    expect(pieces.join('')).toBe(long);
    expect(split('a'.repeat(50), 7, { maxChars: 20 }).map((piece) => piece.length)).toEqual([20, 20, 10]);
    expect(split('很'.repeat(30) + '，' + '长'.repeat(30) + '。', 4, { maxChars: 40 })).toEqual(['很'.repeat(30) + '，', '长'.repeat(30) + '。']);
  });

  it('lets the first piece end at a comma once it is long enough, to start speaking early', () => {
    expect(split('好的，我来帮你查一下北京明天的天气，请稍等。然后告诉你。', 2, { firstClauseChars: 8 })).toEqual([
      '好的，我来帮你查一下北京明天的天气，',
      '请稍等。',
      '然后告诉你。',
    ]);
    expect(split('Sure, let me look up the weather for you. Done.', 4, { firstClauseChars: 4 })).toEqual([
      'Sure,',
      ' let me look up the weather for you.',
      ' Done.',
    ]);
    expect(split('It costs 1,000 yuan, which is a lot.', 3, { firstClauseChars: 4 })).toEqual(['It costs 1,000 yuan,', ' which is a lot.']);
  });

  it('does not scan the whitespace it holds again at every push', () => {
    const splitter = new SentenceSplitter();
    // 200,000 pushes of whitespace: quadratic, this was minutes.
    for (let index = 0; index < 200_000; index += 1) expect(splitter.push(' \t')).toEqual([]);
    expect(splitter.push('Hello there. ')).toEqual([`${' \t'.repeat(200_000)}Hello there.`]);
  });
});
