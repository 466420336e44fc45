import { ToolRegistryService } from '../../src/core/tools/tool-registry.service';
import { LlmClient, LlmStack, startLlmStack } from '../support/llm-stack';
import { toolResults } from '../support/scripted-llm';
import { SPEC_BATTERY_TOOL, SPEC_VOLUME_TOOL } from '../support/spec-clients';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

const BATTERY = SPEC_BATTERY_TOOL;
const VOLUME = SPEC_VOLUME_TOOL;

async function register(client: LlmClient, tools: unknown[]): Promise<any> {
  client.send({ type: 'register_tools', tools });
  return (await client.until('tools_registered')).pop();
}

describe('LLM gateway client tools', () => {
  let stack: LlmStack;

  beforeAll(async () => {
    stack = await startLlmStack({ CLIENT_TOOL_TIMEOUT: 0.5, CLIENT_TOOLS_MAX_COUNT: 4 });
  });
  afterAll(() => stack.close());
  beforeEach(() => stack.llm.reset());

  describe('registration (spec 4.6, 5.5, 9.3)', () => {
    it('registers tools and confirms each', async () => {
      const client = await stack.connect();
      expect(await register(client, [BATTERY, VOLUME])).toEqual({
        type: 'tools_registered',
        count: 2,
        tools: [
          { name: 'get_battery', status: 'registered' },
          { name: 'set_volume', status: 'registered' },
        ],
        timestamp: expect.stringMatching(ISO),
      });
      client.send({ type: 'text_input', text: 'hi' });
      await client.until('llm_response');
      const offered = stack.llm.requests[0].tools!.find((tool) => tool.function.name === 'set_volume');
      expect(offered).toEqual({ type: 'function', function: { name: 'set_volume', description: '设置设备音量', parameters: VOLUME.parameters } });
      await client.close();
    });

    it("fails bad tools one by one, with a reason and the spec's code", async () => {
      const client = await stack.connect();
      await register(client, [BATTERY]);
      const answer = await register(client, [
        { ...BATTERY },
        { name: '1tool', description: 'x', parameters: { type: 'object' } },
        { name: 'tool.', description: 'x', parameters: { type: 'object' } },
        { name: 'tool..name', description: 'x', parameters: { type: 'object' } },
        { name: 'get_weather', description: 'mine', parameters: { type: 'object' } },
        { name: 'no_description', parameters: { type: 'object' } },
        { name: 'bad_schema', description: 'x', parameters: { type: 'object', properties: { a: { type: 'colour' } } } },
        { name: 'not_an_object', description: 'x', parameters: { type: 'string' } },
        VOLUME,
      ]);
      expect(answer.count).toBe(1);
      expect(answer.tools).toEqual([
        { name: 'get_battery', status: 'failed', error: 'Tool name already exists', code: 'TOOL_REGISTRATION_FAILED' },
        { name: '1tool', status: 'failed', error: expect.stringMatching(/start with a letter/), code: 'TOOL_REGISTRATION_FAILED' },
        { name: 'tool.', status: 'failed', error: expect.stringMatching(/must not end with "."/), code: 'TOOL_REGISTRATION_FAILED' },
        { name: 'tool..name', status: 'failed', error: expect.stringMatching(/must not contain ".."/), code: 'TOOL_REGISTRATION_FAILED' },
        { name: 'get_weather', status: 'failed', error: 'Tool name already exists', code: 'TOOL_REGISTRATION_FAILED' },
        { name: 'no_description', status: 'failed', error: expect.stringMatching(/description is required/), code: 'TOOL_REGISTRATION_FAILED' },
        { name: 'bad_schema', status: 'failed', error: expect.stringMatching(/Invalid JSON Schema/), code: 'INVALID_TOOL_PARAMETERS' },
        { name: 'not_an_object', status: 'failed', error: expect.stringMatching(/must describe an object/), code: 'INVALID_TOOL_PARAMETERS' },
        { name: 'set_volume', status: 'registered' },
      ]);
      await client.close();
    });

    it('answers a frame of good and malformed tools tool by tool, and the good ones serve the next turn (spec 4.6, 5.5, 11.5)', async () => {
      const client = await stack.connect();
      const answer = await register(client, [
        { name: 'light_on', description: 'Turns the light on', parameters: { type: 'object' } },
        { name: 'params_string', description: 'x', parameters: 'not a schema' },
        { name: 'params_number', description: 'x', parameters: 42 },
        { name: 'params_array', description: 'x', parameters: [{ type: 'object' }] },
        { name: 'params_missing', description: 'x' },
        { description: 'no name', parameters: { type: 'object' } },
        { name: 7, description: 'numeric name', parameters: { type: 'object' } },
        { name: 'light_on', description: 'twice in one frame', parameters: { type: 'object' } },
        { name: 'light_off', description: 'Turns the light off', parameters: { type: 'object', properties: { room: { type: 'string' } } } },
      ]);
      expect(answer).toMatchObject({ type: 'tools_registered', count: 2 });
      expect(answer.tools).toEqual([
        { name: 'light_on', status: 'registered' },
        { name: 'params_string', status: 'failed', error: expect.stringMatching(/JSON Schema object/), code: 'INVALID_TOOL_PARAMETERS' },
        { name: 'params_number', status: 'failed', error: expect.stringMatching(/JSON Schema object/), code: 'INVALID_TOOL_PARAMETERS' },
        { name: 'params_array', status: 'failed', error: expect.stringMatching(/JSON Schema object/), code: 'INVALID_TOOL_PARAMETERS' },
        { name: 'params_missing', status: 'failed', error: expect.stringMatching(/JSON Schema object/), code: 'INVALID_TOOL_PARAMETERS' },
        { name: '', status: 'failed', error: 'Tool name must be a non-empty string', code: 'TOOL_REGISTRATION_FAILED' },
        { name: '7', status: 'failed', error: 'Tool name must be a non-empty string', code: 'TOOL_REGISTRATION_FAILED' },
        { name: 'light_on', status: 'failed', error: 'Tool name already exists', code: 'TOOL_REGISTRATION_FAILED' },
        { name: 'light_off', status: 'registered' },
      ]);

      stack.llm.reply({ toolCalls: [{ id: 'l', name: 'light_off', arguments: { room: 'hall' } }] }, { text: 'Done.' });
      client.send({ type: 'text_input', text: 'Lights off in the hall' });
      const callback = (await client.until('tool_callback')).pop();
      expect(callback).toMatchObject({ tool_name: 'light_off', arguments: { room: 'hall' } });
      expect(stack.llm.requests[0].tools!.map((tool) => tool.function.name)).toEqual(expect.arrayContaining(['light_on', 'light_off']));
      expect(stack.llm.requests[0].tools!.map((tool) => tool.function.name)).not.toContain('params_string');
      client.send({ type: 'tool_result', call_id: callback.call_id, success: true, result: 'off' });
      expect((await client.until('llm_response')).pop().content).toBe('Done.');
      await client.close();
    });

    it('answers an empty list with count 0, and a list that is not one of objects with INVALID_MESSAGE', async () => {
      const client = await stack.connect();
      expect(await register(client, [])).toMatchObject({ type: 'tools_registered', count: 0, tools: [] });
      client.send({ type: 'register_tools', tools: [{ name: 'fine', description: 'x', parameters: { type: 'object' } }, 'not a tool'] });
      expect(await client.next()).toMatchObject({ type: 'error', code: 'INVALID_MESSAGE', message: 'tools.1 must be object' });
      expect(await register(client, [{ name: 'fine', description: 'x', parameters: { type: 'object' } }])).toMatchObject({ count: 1 });
      await client.close();
    });

    it('refuses tools past CLIENT_TOOLS_MAX_COUNT', async () => {
      const client = await stack.connect();
      const tools = [1, 2, 3, 4, 5].map((n) => ({ name: `tool_${n}`, description: 'x', parameters: { type: 'object' } }));
      const answer = await register(client, tools);
      expect(answer.count).toBe(4);
      expect(answer.tools[4]).toEqual({
        name: 'tool_5',
        status: 'failed',
        error: 'Too many tools: at most 4 per connection',
        code: 'TOOL_REGISTRATION_FAILED',
      });
      await client.close();
    });

    it("keeps a connection's tools to itself, and removes them when it closes", async () => {
      const registry = stack.gateway.app.get(ToolRegistryService);
      const changes: string[] = [];
      const subscription = registry.changes.subscribe((change) => changes.push(`${change.type}:${change.tool.name}:${change.connectionId !== undefined}`));
      const owner = await stack.connect();
      await register(owner, [BATTERY]);
      const other = await stack.connect();
      other.send({ type: 'text_input', text: 'hi' });
      await other.until('llm_response');
      expect(stack.llm.requests[0].tools!.map((tool) => tool.function.name)).not.toContain('get_battery');
      expect(registry.get('get_battery')).toBeUndefined();
      await owner.close();
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(changes).toEqual(['added:get_battery:true', 'removed:get_battery:true']);
      subscription.unsubscribe();
      await other.close();
    });
  });

  describe('calls (spec 7.5, 9.4)', () => {
    it('calls back the device, waits for its result and feeds it to the model', async () => {
      const client = await stack.connect();
      await register(client, [BATTERY]);
      stack.llm.reply({ toolCalls: [{ id: 'b1', name: 'get_battery', arguments: {} }] }, (request) => ({
        text: `您的设备电量还剩${toolResults(request).b1.level}%`,
      }));
      client.send({ type: 'text_input', text: '我的电量还剩多少？' });
      const beforeCallback = await client.until('tool_callback');
      expect(beforeCallback.slice(-2)).toEqual([
        { type: 'status', status: 'waiting_for_tools', data: { pending_tools: 1 }, turn_id: expect.any(String), timestamp: expect.stringMatching(ISO) },
        {
          type: 'tool_callback',
          call_id: expect.any(String),
          tool_name: 'get_battery',
          arguments: {},
          turn_id: expect.any(String),
          timestamp: expect.stringMatching(ISO),
        },
      ]);
      const { call_id } = beforeCallback.pop();
      client.send({ type: 'tool_result', call_id, result: { level: 85, charging: false }, success: true, error: null });
      const rest = await client.until('status', 'idle');
      expect(rest.some((frame) => frame.type === 'tool_call')).toBe(false);
      expect(rest.find((frame) => frame.type === 'llm_response')).toMatchObject({
        content: '您的设备电量还剩百分之85',
        tool_calls: [{ call_id: 'b1', name: 'get_battery', location: 'client', success: true }],
      });
      expect(stack.llm.requests[1].messages.pop()).toEqual({ role: 'tool', tool_call_id: 'b1', content: '{"level":85,"charging":false}' });
      await client.close();
    });

    it('feeds a device failure (success: false) to the model as TOOL_EXECUTION_FAILED', async () => {
      const client = await stack.connect();
      await register(client, [VOLUME]);
      stack.llm.reply({ toolCalls: [{ id: 'v', name: 'set_volume', arguments: { volume: 50 } }] }, (request) => ({
        text: JSON.stringify(toolResults(request).v),
      }));
      client.send({ type: 'text_input', text: '把音量调到50' });
      const { call_id } = (await client.until('tool_callback')).pop();
      client.send({ type: 'tool_result', call_id, result: null, success: false, error: '设备连接超时' });
      const answer = (await client.until('llm_response')).pop();
      expect(JSON.parse(answer.content)).toEqual({ error: { code: 'TOOL_EXECUTION_FAILED', message: '设备连接超时' } });
      expect(answer.tool_calls[0]).toMatchObject({ location: 'client', success: false });
      await client.close();
    });

    it("checks the model's arguments against the device's schema before calling back", async () => {
      const client = await stack.connect();
      await register(client, [VOLUME]);
      stack.llm.reply({ toolCalls: [{ id: 'v', name: 'set_volume', arguments: { volume: 500 } }] }, (request) => ({ text: toolResults(request).v.error.code }));
      client.send({ type: 'text_input', text: 'louder!' });
      const frames = await client.until('status', 'idle');
      expect(frames.some((frame) => frame.type === 'tool_callback' || frame.status === 'waiting_for_tools')).toBe(false);
      expect(frames.find((frame) => frame.type === 'tool_call')).toMatchObject({
        tool_name: 'set_volume',
        success: false,
        result: { error: { code: 'INVALID_TOOL_PARAMETERS', message: expect.stringMatching(/argument "volume" must be <= 100/) } },
      });
      expect(frames.find((frame) => frame.type === 'llm_response').content).toBe('INVALID_TOOL_PARAMETERS');
      await client.close();
    });

    it('ends the turn with TOOL_RESULT_TIMEOUT when the device does not answer (spec 9.8), then works on', async () => {
      const client = await stack.connect();
      await register(client, [{ name: 'open_door', description: '打开车门', parameters: { type: 'object' } }]);
      stack.llm.reply({ toolCalls: [{ name: 'open_door', arguments: {} }] });
      client.send({ type: 'text_input', text: '打开车门' });
      const { call_id } = (await client.until('tool_callback')).pop();
      const frames = await client.until('status', 'idle');
      expect(frames[0]).toEqual({
        type: 'error',
        code: 'TOOL_RESULT_TIMEOUT',
        message: 'Tool execution timeout',
        details: 'No tool_result for "open_door" within 0.5 s',
        turn_id: expect.any(String),
        timestamp: expect.stringMatching(ISO),
      });
      expect(frames.some((frame) => frame.type === 'llm_response')).toBe(false);

      client.send({ type: 'tool_result', call_id, success: true, result: 'opened, too late' });
      expect((await client.until('error')).pop()).toMatchObject({ code: 'INVALID_MESSAGE', message: `Unknown or expired call_id "${call_id}"` });

      client.send({ type: 'text_input', text: 'next question' });
      expect((await client.until('llm_response')).pop().content).toBe('You said: next question');
      await client.close();
    });

    it('forgets the pending call when the device disconnects mid-call', async () => {
      const client = await stack.connect();
      await register(client, [BATTERY]);
      stack.llm.reply({ toolCalls: [{ name: 'get_battery', arguments: {} }] });
      client.send({ type: 'text_input', text: 'battery?' });
      await client.until('tool_callback');
      await client.close();
      await new Promise((resolve) => setTimeout(resolve, 700));
      expect(stack.llm.requests).toHaveLength(1);
      expect(stack.gateway.app.get(ToolRegistryService).get('get_battery')).toBeUndefined();
    });
  });

  describe('mixed calls (spec 7.6, 9.5)', () => {
    it('runs server and device tools of one round together and feeds back every result', async () => {
      const client = await stack.connect();
      await register(client, [VOLUME]);
      stack.llm.reply(
        {
          toolCalls: [
            { id: 's', name: 'calculator', arguments: { a: 25, b: 2, operation: 'multiply' } },
            { id: 'c', name: 'set_volume', arguments: { volume: 50 } },
          ],
        },
        (request) => {
          const results = toolResults(request);
          return { text: `已计算${results.s}并将音量设置为${results.c.volume}` };
        },
      );
      client.send({ type: 'text_input', text: '算一下然后设置音量' });
      const upToCallback = await client.until('tool_callback');
      expect(upToCallback.find((frame) => frame.status === 'waiting_for_tools').data).toEqual({ pending_tools: 1 });
      const callback = upToCallback.pop();
      expect(callback).toMatchObject({ tool_name: 'set_volume', arguments: { volume: 50 } });
      client.send({ type: 'tool_result', call_id: callback.call_id, result: { volume: 50 }, success: true });
      const all = [...upToCallback, ...(await client.until('status', 'idle'))];
      expect(all.find((frame) => frame.type === 'tool_call')).toMatchObject({ tool_name: 'calculator', result: 50, success: true });
      expect(all.find((frame) => frame.type === 'llm_response')).toMatchObject({
        content: '已计算50并将音量设置为50',
        tool_calls: expect.arrayContaining([
          expect.objectContaining({ call_id: 's', location: 'server' }),
          expect.objectContaining({ call_id: 'c', location: 'client' }),
        ]),
      });
      await client.close();
    });
  });
});

describe('LLM gateway with client tools disabled', () => {
  it('refuses register_tools with TOOL_REGISTRATION_FAILED and keeps the connection', async () => {
    const stack = await startLlmStack({ CLIENT_TOOLS_ENABLED: false });
    try {
      const client = await stack.connect();
      client.send({ type: 'register_tools', tools: [BATTERY] });
      expect((await client.until('error')).pop()).toMatchObject({ code: 'TOOL_REGISTRATION_FAILED', message: 'Client tools are disabled on this server' });
      client.send({ type: 'text_input', text: 'hi' });
      expect((await client.until('llm_response')).pop().content).toBe('You said: hi');
      await client.close();
    } finally {
      await stack.close();
    }
  });
});
