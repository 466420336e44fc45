import { cleanForSpeech } from './clean-for-speech';

describe('cleanForSpeech', () => {
  it.each([
    ['**今天**天气*晴朗*，适合外出。', '今天天气晴朗，适合外出。'],
    ['__Bold__ and _italic_ and ~~gone~~ words', 'Bold and italic and gone words'],
    ['# Weather\n## Today', 'Weather\nToday'],
    ['- milk\n* eggs\n+ bread\n- [x] done', 'milk\neggs\nbread\ndone'],
    ['1. Preheat the oven\n2. Bake', '1. Preheat the oven\n2. Bake'],
    ['See [the forecast](https://example.com/f) and ![a map](map.png).', 'See the forecast and a map.'],
    ['Run `npm start` now', 'Run npm start now'],
    ['```bash\nnpm start\n```', 'npm start'],
    ['| City | Temp |\n|------|:----:|\n| Beijing | 22 |', 'City, Temp\nBeijing, 22'],
    ['> quoted words', 'quoted words'],
    ['above\n\n---\n\nbelow', 'above\nbelow'],
    ['今天天气不错😀👍🏽！🇨🇳 出发吧❤️', '今天天气不错！ 出发吧'],
    ['★☆◆◇●■□ 重点 → 注意 ✓', '重点到注意'],
    ['<think>用户问天气</think>北京今天晴，22度。', '北京今天晴，22度。'],
  ])('%j -> %j', (input, output) => expect(cleanForSpeech(input)).toBe(output));

  it('keeps what only looks like Markdown', () => {
    expect(cleanForSpeech('snake_case_name stays, 2*3*4 = 24, a * b')).toBe('snake_case_name stays, 2*3*4 = 24, a * b');
    expect(cleanForSpeech('约翰·史密斯说：“你好。”')).toBe('约翰·史密斯说：“你好。”');
  });

  it('leaves nothing but the words of a typical Markdown answer', () => {
    const answer = '<think>\nThe user wants a plan.\n</think>\n\n## 明天的安排 📅\n\n1. **早上**：跑步 🏃\n2. *下午*：[读书](http://x)\n\n> 记得带伞 ☔';
    expect(cleanForSpeech(answer)).toBe('明天的安排\n1. 早上：跑步\n2. 下午：读书\n记得带伞');
  });

  // Each of these took seconds to minutes at this size when a pattern was tried from every
  // position of a long line (quadratic); linear, the whole table is cleaned in milliseconds.
  it.each([
    ['letters', 'x'.repeat(200_000)],
    ['digits', '1'.repeat(200_000)],
    ['unclosed links', '[a'.repeat(100_000)],
    ['unclosed images', '![a'.repeat(66_000)],
    ['links without their end', '[a]('.repeat(50_000)],
    ['unclosed autolinks', '<http://a'.repeat(22_000)],
  ])('cleans a 200 KB line of %s in one pass', (_name, line) => {
    expect(cleanForSpeech(line, 'en').length).toBeGreaterThan(0);
  });
});
