import { HiddenTextFilter, stripHiddenText } from './hidden-text';

describe('stripHiddenText', () => {
  it.each([
    ['<think>plan the answer</think>\n\nIt is sunny.', 'It is sunny.'],
    ['<THINK>a</THINK>One<think>b</think> two', 'One two'],
    ['reasoning the server left without its opening tag</think>Answer', 'Answer'],
    ['Answer so far <think>cut off mid-thought', 'Answer so far'],
    ['<think>\n\n</think>\n\n你好！', '你好！'],
    ['Let me check.<tool_call>{"name":"get_weather","arguments":{}}</tool_call>', 'Let me check.'],
    ['好的<|FunctionCallBegin|>[{"name":"x"}]<|FunctionCallEnd|>。', '好的。'],
    ['No reasoning at all, 3 < 4 and a <b>tag</b>', 'No reasoning at all, 3 < 4 and a <b>tag</b>'],
  ])('%j -> %j', (input, output) => expect(stripHiddenText(input)).toBe(output));
});

describe('HiddenTextFilter', () => {
  const stream = (chunks: string[]) => {
    const filter = new HiddenTextFilter();
    return chunks.map((chunk) => filter.push(chunk).visible).join('') + filter.end();
  };

  it('drops spans whose tags are split across chunks, and holds back only what may be a tag', () => {
    expect(stream(['Hi <thi', 'nk>secret</th', 'ink> there'])).toBe('Hi  there');
    expect(stream(['a <', 'tool_call>x</tool_', 'call>b'])).toBe('a b');
    const filter = new HiddenTextFilter();
    expect(filter.push('x < y').visible).toBe('x < y');
    expect(filter.push('z <').visible).toBe('z ');
    expect(filter.push('b>').visible).toBe('<b>');
  });

  it('reports a lone </think>: all before it was reasoning', () => {
    const filter = new HiddenTextFilter();
    expect(filter.push('reasoning, ').visible).toBe('reasoning, ');
    expect(filter.push('more</think>The answer')).toEqual({ visible: 'The answer', reasoningEnded: true });
  });
});
