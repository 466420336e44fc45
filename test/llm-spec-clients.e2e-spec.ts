import { LlmStack, startLlmStack } from './support/llm-stack';
import { ChatRequest, lastUserText, ScriptedReply, toolResults } from './support/scripted-llm';
import { SPEC_BATTERY_TOOL, SPEC_VOLUME_TOOL, SpecJsClient, SpecPythonClient } from './support/spec-clients';

const TOOLS = [SPEC_BATTERY_TOOL, SPEC_VOLUME_TOOL];

/**
 * A model that behaves like Qwen3 with the spec's tools: battery questions call `get_battery`,
 * volume requests `set_volume`, weather questions `get_weather`, "both" asks the weather and
 * sets the volume at once; after tool results it answers from them, Markdown and emoji included.
 */
function assistant(request: ChatRequest): ScriptedReply {
  const results = toolResults(request);
  if (Object.keys(results).length > 0) {
    if (results.battery) return { text: `您的设备电量还剩**${results.battery.level}%** 🔋` };
    if (results.volume && results.weather) return { text: `北京${results.weather.condition}，已将音量设置为${results.volume.volume}` };
    if (results.volume) return { text: `已将音量设置为${results.volume.volume}` };
    if (results.weather) return { text: `<think>read the data</think>北京今天${results.weather.temperature}度。` };
  }
  const text = lastUserText(request);
  if (text.includes('电量')) return { toolCalls: [{ id: 'battery', name: 'get_battery', arguments: {} }] };
  if (text.includes('天气') && text.includes('音量')) {
    return {
      toolCalls: [
        { id: 'weather', name: 'get_weather', arguments: { city: '北京' } },
        { id: 'volume', name: 'set_volume', arguments: { volume: 30 } },
      ],
    };
  }
  if (text.includes('音量')) return { toolCalls: [{ id: 'volume', name: 'set_volume', arguments: { volume: 50 } }] };
  if (text.includes('天气')) return { toolCalls: [{ id: 'weather', name: 'get_weather', arguments: { city: '北京' } }] };
  return { text: '你好！有什么我可以帮助你的吗？' };
}

describe('clients written to the spec\'s examples (section 10)', () => {
  let stack: LlmStack;

  beforeAll(async () => {
    stack = await startLlmStack();
  });
  afterAll(() => stack.close());
  beforeEach(() => {
    stack.llm.reset();
    for (let i = 0; i < 20; i += 1) stack.llm.reply(assistant);
  });

  it('the JavaScript client holds a conversation with device, server and mixed tools', async () => {
    const client = new SpecJsClient(stack.gateway.ws('/'));
    await client.connect();
    expect(client.sessionId).toMatch(/^[0-9a-f-]{36}$/);

    client.registerTool('get_battery', async () => ({ level: 85, charging: false }));
    client.registerTool('set_volume', async (args: { volume: number }) => ({ volume: args.volume, status: 'set' }));
    const registered = await client.registerTools(TOOLS);
    expect(registered.count).toBe(2);
    client.configure({ enable_context: true });

    expect(await client.sendText('你好')).toBe('你好！有什么我可以帮助你的吗？');
    expect(await client.sendText('我的电量还剩多少？')).toBe('您的设备电量还剩百分之85');
    expect(await client.sendText('把音量调到50')).toBe('已将音量设置为50');
    expect(await client.sendText('今天天气怎么样？')).toBe('北京今天22.5度。');
    expect(await client.sendText('看看天气，再把音量调到30')).toBe('北京clear sky，已将音量设置为30');
    expect(client.log).toEqual(expect.arrayContaining([['Server tool:', 'get_weather', expect.objectContaining({ temperature: 22.5 })]]));

    const lastRequest = stack.llm.requests.at(-1)!;
    expect(lastRequest.messages.some((m) => m.content === '我的电量还剩多少？')).toBe(true);
    client.close();
  });

  it('the JavaScript client sees errors through its error handler, and goes on', async () => {
    const client = new SpecJsClient(stack.gateway.ws('/'));
    await client.connect();
    await expect(client.sendText('')).rejects.toThrow('INVALID_MESSAGE: Text cannot be empty');
    expect(await client.sendText('你好')).toBe('你好！有什么我可以帮助你的吗？');
    client.close();
  });

  it('the Python client holds a conversation with device, server and mixed tools', async () => {
    const client = new SpecPythonClient(stack.gateway.ws('/'));
    await client.connect();
    client.define_tool('get_battery', async () => ({ level: 85, charging: false }));
    client.define_tool('set_volume', async ({ volume }: { volume: number }) => ({ volume, status: 'set' }));
    await client.register_tools(TOOLS);
    expect(client.printed).toEqual([
      `Connected. Session ID: ${client.session_id}`,
      'Registered 2 tools',
      '  - get_battery: OK',
      '  - set_volume: OK',
    ]);

    expect(await client.send_text('我的电量还剩多少？')).toBe('您的设备电量还剩百分之85');
    expect(await client.send_text('把音量调到50')).toBe('已将音量设置为50');
    expect(await client.send_text('今天天气怎么样？')).toBe('北京今天22.5度。');
    client.configure({ temperature: 0.3 });
    expect(await client.send_text('看看天气，再把音量调到30')).toBe('北京clear sky，已将音量设置为30');
    expect(client.printed).toEqual(
      expect.arrayContaining(['Client tool called: get_battery with {}', 'Server tool called: get_weather', 'Client tool called: set_volume with {"volume":30}']),
    );
    expect(stack.llm.requests.at(-1)!.temperature).toBe(0.3);
    client.close();
  });

  it('the Python client sees a device tool it never defined fail cleanly', async () => {
    const client = new SpecPythonClient(stack.gateway.ws('/'));
    await client.connect();
    await client.register_tools(TOOLS);
    stack.llm.reset();
    stack.llm.reply({ toolCalls: [{ id: 'battery', name: 'get_battery', arguments: {} }] }, (request) => ({ text: toolResults(request).battery.error.message }));
    expect(await client.send_text('电量')).toBe("Tool 'get_battery' not found");
    client.close();
  });
});
