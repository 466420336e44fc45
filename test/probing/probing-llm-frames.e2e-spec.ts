import { LlmStack, startLlmStack } from '../support/llm-stack';

/** `register_tools` frame text listing `count` copies of `item` (JSON text). */
const registerToolsOf = (item: string, count: number) => `{"type":"register_tools","tools":[${Array(count).fill(item).join(',')}]}`;

/**
 * The LLM gateway's frames where probing found wrong answers: settings set to null, and
 * `register_tools` frames of a megabyte of junk, which must be answered once, at once and
 * briefly, with the connection kept.
 */
describe('probing: LLM gateway frames', () => {
  let stack: LlmStack;

  beforeAll(async () => {
    stack = await startLlmStack({ LLM_TEMPERATURE: 0.3, LLM_MAX_TOKENS: 300 });
  });
  afterAll(() => stack.close());
  beforeEach(() => stack.llm.reset());

  it('refuses configure {temperature: null, max_tokens: null}, and the model never sees a null', async () => {
    const client = await stack.connect();
    client.send({ type: 'configure', temperature: null, max_tokens: null });
    expect(await client.next()).toMatchObject({
      type: 'error',
      code: 'INVALID_MESSAGE',
      message: 'temperature must be a number; max_tokens must be an integer',
    });
    client.send({ type: 'text_input', text: 'hello' });
    expect((await client.until('llm_response')).pop()).toMatchObject({ content: 'You said: hello' });
    expect(stack.llm.requests).toHaveLength(1);
    expect(stack.llm.requests[0]).toMatchObject({ temperature: 0.3, max_tokens: 300 });
    await client.close();
  });

  it.each([
    ['~349,000 empty objects', '{}', 349_000],
    ['~500,000 numbers', '1', 500_000],
    ['~333,000 empty arrays', '[]', 333_000],
  ])('answers a 1 MB register_tools frame of %s with one small INVALID_MESSAGE, and registers tools afterwards', async (_name, item, count) => {
    const client = await stack.connect();
    const frame = registerToolsOf(item, count);
    expect(frame.length).toBeGreaterThan(900_000);
    client.send(frame);
    const answer = await client.nextText(20_000);
    expect(answer.length).toBeLessThan(500);
    expect(JSON.parse(answer)).toMatchObject({ type: 'error', code: 'INVALID_MESSAGE', message: 'tools must list at most 256 tools in one frame' });
    await client.expectSilence(100);
    client.send({ type: 'register_tools', tools: [{ name: 'get_battery', description: 'Battery level', parameters: { type: 'object' } }] });
    expect(await client.next()).toMatchObject({ type: 'tools_registered', count: 1 });
    await client.close();
  });

  it('names every problem of a small refused frame, and only the first few of a large one', async () => {
    const client = await stack.connect();
    client.send({ type: 'register_tools', tools: [1, 'two', null] });
    expect(await client.next()).toMatchObject({ code: 'INVALID_MESSAGE', message: 'tools.0 must be object; tools.1 must be object; tools.2 must be object' });
    client.send({ type: 'configure', temperature: 'hot', max_tokens: 0.5, enable_context: 'yes', stream: 1 });
    expect((await client.next()).message).toBe(
      'temperature must be a number; max_tokens must be an integer; max_tokens must not be less than 1; enable_context must be true or false; stream must be true or false',
    );
    client.send({ type: 'register_tools', tools: Array.from({ length: 14 }, (_, index) => index) });
    expect((await client.next()).message).toBe(`${Array.from({ length: 10 }, (_, index) => `tools.${index} must be object`).join('; ')}; and 4 more`);
    await client.close();
  });
});
