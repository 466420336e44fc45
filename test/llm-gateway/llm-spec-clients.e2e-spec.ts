import { LlmStack, startLlmStack } from '../support/llm-stack';
import { ChatRequest, lastUserText, ScriptedReply, toolResults } from '../support/scripted-llm';
import { SPEC_BATTERY_TOOL, SPEC_VOLUME_TOOL, SpecJsClient, SpecPythonClient } from '../support/spec-clients';
import { DEBIAN_PYTHON, findPython, PYTHON_MISSING, runSpecPythonClient } from '../support/spec-python-client';

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

describe("clients written to the spec's examples (section 10)", () => {
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

  it('the JavaScript client as the spec wrote it never gets past registerTools (its onmessage drops tools_registered)', async () => {
    const client = new SpecJsClient(stack.gateway.ws('/'), { asWritten: true });
    await client.connect();
    const outcome = await Promise.race([
      client.registerTools(TOOLS).then(() => 'resolved'),
      new Promise((resolve) => setTimeout(() => resolve('still waiting'), 1000)),
    ]);
    expect(outcome).toBe('still waiting');
    expect(client.log).toContainEqual(['Registered 2 tools']); // the frame came; nothing handed it on
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
    expect(client.printed).toEqual([`Connected. Session ID: ${client.session_id}`, 'Registered 2 tools', '  - get_battery: OK', '  - set_volume: OK']);

    expect(await client.send_text('我的电量还剩多少？')).toBe('您的设备电量还剩百分之85');
    expect(await client.send_text('把音量调到50')).toBe('已将音量设置为50');
    expect(await client.send_text('今天天气怎么样？')).toBe('北京今天22.5度。');
    client.configure({ temperature: 0.3 });
    expect(await client.send_text('看看天气，再把音量调到30')).toBe('北京clear sky，已将音量设置为30');
    expect(client.printed).toEqual(
      expect.arrayContaining([
        'Client tool called: get_battery with {}',
        'Server tool called: get_weather',
        'Client tool called: set_volume with {"volume":30}',
      ]),
    );
    expect(stack.llm.requests.at(-1)!.temperature).toBe(0.3);
    client.close();
  });

  it('the Python client sees a device tool it never defined fail cleanly', async () => {
    const client = new SpecPythonClient(stack.gateway.ws('/'));
    await client.connect();
    await client.register_tools(TOOLS);
    stack.llm.reset();
    stack.llm.reply({ toolCalls: [{ id: 'battery', name: 'get_battery', arguments: {} }] }, (request) => ({
      text: toolResults(request).battery.error.message,
    }));
    expect(await client.send_text('电量')).toBe("Tool 'get_battery' not found");
    client.close();
  });
});

/**
 * The spec's Python client itself (test/support/spec-python-client/llm_gateway_client.py, the
 * example of section 10.1 byte for byte) under python3 with websockets: its own main() and its
 * methods on server tools, mixed turns and errors.
 */
describe("the spec's Python client, unchanged, in python3", () => {
  let stack: LlmStack;
  let python: string;

  beforeAll(async () => {
    python = findPython();
    stack = await startLlmStack();
  });
  afterAll(() => stack?.close());
  beforeEach(() => {
    stack.llm.reset();
    for (let i = 0; i < 20; i += 1) stack.llm.reply(assistant);
  });

  it("runs the example's main(): configure, register the device tools, two turns that call them", async () => {
    const run = await runSpecPythonClient(python, stack.gateway.ws('/'), 'main');
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(run.stdout).toEqual([
      expect.stringMatching(/^Connected\. Session ID: [0-9a-f-]{36}$/),
      'Registered 2 tools',
      '  - get_battery: OK',
      '  - set_volume: OK',
      'Client tool called: get_battery with {}',
      'Response: 您的设备电量还剩百分之85',
      "Client tool called: set_volume with {'volume': 50}",
      'Response: 已将音量设置为50',
    ]);
    // configure(enable_context=True) took effect: the second turn's request carries the first.
    expect(stack.llm.requests.at(-1)!.messages.some((m) => m.content === '我的电量还剩多少？')).toBe(true);
  });

  it('sees server tools, a mixed turn and an error frame through its methods', async () => {
    const run = await runSpecPythonClient(python, stack.gateway.ws('/'), 'session');
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(run.stdout).toEqual(
      expect.arrayContaining([
        'Server tool called: get_weather',
        'Response: 北京今天22.5度。',
        "Client tool called: set_volume with {'volume': 30}",
        'Response: 北京clear sky，已将音量设置为30',
        'Raised: INVALID_MESSAGE: Text cannot be empty',
        'Response: 你好！有什么我可以帮助你的吗？',
      ]),
    );
    expect(run.stdout.filter((line) => line.startsWith('Result: '))).toEqual([
      expect.stringContaining("'temperature': 22.5"),
      expect.stringContaining("'temperature': 22.5"),
    ]); // one weather call per turn
    expect(stack.llm.requests.at(-1)!.temperature).toBe(0.3);
  });
});

describe("the interpreter for the spec's Python client", () => {
  it('finds an interpreter with websockets, or fails with one line saying what to install', () => {
    expect(findPython({ PYTHON: '/opt/py/bin/python' }, () => true)).toBe('/opt/py/bin/python');
    expect(findPython({}, (candidate) => candidate === DEBIAN_PYTHON)).toBe(DEBIAN_PYTHON);
    expect(findPython({}, () => true)).toBe('python3');
    expect(() => findPython({}, () => false)).toThrow(PYTHON_MISSING);
    expect(PYTHON_MISSING).toContain('apt-get install -y python3-websockets');
    expect(PYTHON_MISSING).not.toContain('\n');
    expect(() => findPython({ PYTHON: '/opt/py/bin/python' }, () => false)).toThrow('PYTHON is /opt/py/bin/python, which cannot import websockets.');
  });
});
