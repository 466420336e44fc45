import { SystemPromptService } from '../../src/assistant/llm/system-prompt.service';
import { CalculatorModule } from '../../src/examples/calculator/calculator.module';
import { LlmStack, startLlmStack } from '../support/llm-stack';
import { toolResults } from '../support/scripted-llm';
import { TestSocket } from '../support/test-socket';
import { TestTools, TestToolsModule } from '../support/test-tools';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe('LLM gateway', () => {
  let stack: LlmStack;

  beforeAll(async () => {
    stack = await startLlmStack({ SERVER_TOOL_TIMEOUT: 0.5, LLM_TIMEOUT: 1 }, [CalculatorModule, TestToolsModule]);
  });
  afterAll(() => stack.close());
  beforeEach(() => stack.llm.reset());

  describe('connecting (spec 2)', () => {
    it.each(['/', '/llm'])('greets a client on %s with status connected and its session id', async (path) => {
      const socket = await TestSocket.open(stack.gateway.ws(path));
      const greeting = await socket.next();
      expect(greeting).toEqual({
        type: 'status',
        status: 'connected',
        data: { session_id: expect.stringMatching(/^[0-9a-f-]{36}$/) },
        timestamp: expect.stringMatching(ISO),
      });
      await socket.close();
    });

    it('answers ping with pong', async () => {
      const client = await stack.connect();
      client.send({ type: 'ping' });
      expect(await client.next()).toEqual({ type: 'pong', timestamp: expect.stringMatching(ISO) });
      await client.close();
    });
  });

  describe('a turn (spec 9.1)', () => {
    it('sends processing, the answer, then idle', async () => {
      const client = await stack.connect();
      stack.llm.reply({ text: '你好！有什么我可以帮助你的吗？' });
      client.send({ type: 'text_input', text: '你好', timestamp: new Date().toISOString() });
      const frames = await client.until('status', 'idle');
      // The spec's frames, each with the turn's id, and the final answer with its timing.
      const turn_id = frames[0].turn_id;
      expect(turn_id).toEqual(expect.any(String));
      const timing = {
        first_token_ms: expect.any(Number),
        first_sentence_ms: expect.any(Number),
        total_ms: expect.any(Number),
        llm_ms: expect.any(Number),
        tools_ms: 0,
      };
      expect(frames).toEqual([
        { type: 'status', status: 'processing', data: { message: expect.any(String) }, turn_id, timestamp: expect.stringMatching(ISO) },
        {
          type: 'llm_response',
          content: '你好！有什么我可以帮助你的吗？',
          tool_calls: [],
          is_final: true,
          timing,
          turn_id,
          timestamp: expect.stringMatching(ISO),
        },
        { type: 'status', status: 'idle', data: { session_id: client.sessionId }, turn_id, timestamp: expect.stringMatching(ISO) },
      ]);
      await client.close();
    });

    it("asks the model with the spec's system prompt, the time, every tool and the session's settings", async () => {
      const client = await stack.connect();
      client.send({ type: 'text_input', text: '现在几点？' });
      await client.until('llm_response');
      const [request] = stack.llm.requests;
      expect(request.model).toBe('Qwen3-30B-A3B');
      expect(request.stream).toBe(true);
      expect(request.temperature).toBe(0.7);
      expect(request.max_tokens).toBe(2048);
      expect(request.messages[0].role).toBe('system');
      expect(request.messages[0].content).toContain('听语AI');
      expect(request.messages[0].content).toMatch(/当前时间：\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} \w+ \(Asia\/Shanghai, UTC\+08:00\)/);
      expect(request.messages.slice(1)).toEqual([{ role: 'user', content: '现在几点？' }]);
      const names = request.tools!.map((tool) => tool.function.name);
      expect(names).toEqual(
        expect.arrayContaining([
          'get_weather',
          'get_current_time',
          'get_location',
          'set_response_language',
          'get_response_language',
          'list_supported_languages',
          'enter_roleplay_mode',
          'exit_roleplay_mode',
          'get_roleplay_status',
          'list_available_characters',
          'calculator',
        ]),
      );
      expect(request.tools!.find((tool) => tool.function.name === 'calculator')!.function.parameters).toMatchObject({
        type: 'object',
        required: ['a', 'b'],
      });
      await client.close();
    });

    it('cleans the answer for speech, and leaves it alone when the client opts out', async () => {
      const client = await stack.connect();
      const markdown = '<think>The user greets me.</think>## 天气 ☀️\n- **晴**，22度 😀\n- [详情](http://x)';
      stack.llm.reply({ text: markdown }, { text: markdown });
      client.send({ type: 'text_input', text: 'hi' });
      expect((await client.until('llm_response')).pop().content).toBe('天气\n晴，22度\n详情');
      client.send({ type: 'configure', clean_response: false });
      client.send({ type: 'text_input', text: 'hi' });
      expect((await client.until('llm_response')).pop().content).toBe('## 天气 ☀️\n- **晴**，22度 😀\n- [详情](http://x)');
      await client.close();
    });

    it('answers requests one after another, in order', async () => {
      const client = await stack.connect();
      stack.llm.reply({ text: 'first', delayMs: 150 }, { text: 'second' });
      client.send({ type: 'text_input', text: 'one' });
      client.send({ type: 'text_input', text: 'two' });
      const answers = [(await client.until('llm_response')).pop().content, (await client.until('llm_response')).pop().content];
      expect(answers).toEqual(['first', 'second']);
      await client.close();
    });
  });

  describe('server tools (spec 7.4, 9.2)', () => {
    it('runs the tool, announces it with tool_call, and feeds the result back', async () => {
      const client = await stack.connect();
      stack.llm.reply({ toolCalls: [{ id: 'c1', name: 'calculator', arguments: { a: 6, b: 7, operation: 'multiply' } }] }, (request) => ({
        text: `The answer is ${toolResults(request).c1}`,
      }));
      client.send({ type: 'text_input', text: '6 times 7?' });
      const frames = await client.until('llm_response');
      const announcement = frames.find((frame) => frame.type === 'tool_call');
      expect(announcement).toEqual({
        type: 'tool_call',
        tool_name: 'calculator',
        arguments: { a: 6, b: 7, operation: 'multiply' },
        result: 42,
        success: true,
        duration_ms: expect.any(Number),
        turn_id: frames[0].turn_id,
        timestamp: expect.stringMatching(ISO),
      });
      expect(frames.pop()).toMatchObject({
        content: 'The answer is 42',
        tool_calls: [{ call_id: 'c1', name: 'calculator', arguments: { a: 6, b: 7, operation: 'multiply' }, location: 'server', success: true }],
      });
      expect(stack.llm.requests[1].messages.slice(-2)).toEqual([
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'calculator', arguments: '{"a":6,"b":7,"operation":"multiply"}' } }],
        },
        { role: 'tool', tool_call_id: 'c1', content: '42' },
      ]);
      await client.close();
    });

    it("runs one round's calls at the same time", async () => {
      const tools = stack.gateway.app.get(TestTools);
      tools.maxInFlight = 0;
      const client = await stack.connect();
      stack.llm.reply({ toolCalls: [1, 2, 3].map((n) => ({ id: `w${n}`, name: 'test.wait', arguments: { ms: 150 } })) }, { text: 'done' });
      client.send({ type: 'text_input', text: 'wait three times' });
      const frames = await client.until('llm_response');
      expect(frames.filter((frame) => frame.type === 'tool_call')).toHaveLength(3);
      expect(tools.maxInFlight).toBe(3);
      await client.close();
    });

    it.each([
      ['a tool that fails', { name: 'test.fail', arguments: {} }, 'TOOL_EXECUTION_FAILED', /out of reach/],
      ['a tool past its time limit', { name: 'test.wait', arguments: { ms: 3000 } }, 'TOOL_EXECUTION_FAILED', /did not finish within 0.5 s/],
      ['a tool that does not exist', { name: 'open_garage', arguments: {} }, 'TOOL_NOT_FOUND', /Unknown tool "open_garage"/],
      ['arguments that are not JSON', { name: 'calculator', arguments: '{"a": 1, "b":' }, 'INVALID_TOOL_PARAMETERS', /not a JSON object/],
      ['arguments against the schema', { name: 'calculator', arguments: { a: 'one' } }, 'INVALID_TOOL_PARAMETERS', /missing required argument "b"/],
    ])('tells the model about %s and still answers', async (_name, call, code, message) => {
      const client = await stack.connect();
      stack.llm.reply({ toolCalls: [{ id: 'x', ...call }] }, (request) => ({ text: `Sorry: ${toolResults(request).x.error.code}` }));
      client.send({ type: 'text_input', text: 'try it' });
      const frames = await client.until('status', 'idle');
      const announcement = frames.find((frame) => frame.type === 'tool_call');
      expect(announcement).toMatchObject({ tool_name: call.name, success: false, result: { error: { code } } });
      expect(announcement.result.error.message).toMatch(message);
      expect(frames.find((frame) => frame.type === 'llm_response').content).toBe(`Sorry: ${code}`);
      expect(frames.some((frame) => frame.type === 'error')).toBe(false);
      await client.close();
    });

    it('stops offering tools at the round limit, so the model has to answer', async () => {
      const client = await stack.connect();
      const again = { toolCalls: [{ name: 'get_current_time', arguments: {} }] };
      stack.llm.reply(again, again, again, again, (request) => ({ text: request.tools ? 'still has tools' : 'forced to answer' }));
      client.send({ type: 'text_input', text: 'loop forever' });
      expect((await client.until('llm_response')).pop().content).toBe('forced to answer');
      expect(stack.llm.requests).toHaveLength(5);
      await client.close();
    });
  });

  describe('errors (spec 5.4, 11)', () => {
    const usableAfterwards = async (client: Awaited<ReturnType<LlmStack['connect']>>) => {
      stack.llm.reply({ text: 'still here' });
      client.send({ type: 'text_input', text: 'are you there?' });
      expect((await client.until('llm_response')).pop().content).toBe('still here');
    };

    it.each([
      ['text that is not JSON', 'INVALID_MESSAGE', '{"type": "text_input", ', /Invalid JSON/],
      ['a JSON array', 'INVALID_MESSAGE', '[]', /JSON object with a string "type"/],
      ['an unknown type', 'UNKNOWN_MESSAGE_TYPE', { type: 'sing' }, /"sing"/],
      ['text_input without text', 'INVALID_MESSAGE', { type: 'text_input' }, /text must be a string/],
      ['empty text (spec 9.7)', 'INVALID_MESSAGE', { type: 'text_input', text: '  ' }, /^Text cannot be empty$/],
      ['a temperature above 1', 'INVALID_MESSAGE', { type: 'configure', temperature: 1.5 }, /temperature must not be greater than 1/],
      ['max_tokens of 0', 'INVALID_MESSAGE', { type: 'configure', max_tokens: 0 }, /max_tokens must not be less than 1/],
      ['enable_context as text', 'INVALID_MESSAGE', { type: 'configure', enable_context: 'yes' }, /enable_context must be true or false/],
      ['an unknown language', 'INVALID_MESSAGE', { type: 'configure', language: 'xx' }, /language must be one of/],
      ['an unknown call_id', 'INVALID_MESSAGE', { type: 'tool_result', call_id: 'nope', success: true, result: 1 }, /Unknown or expired call_id "nope"/],
      ['a tool_result without success', 'INVALID_MESSAGE', { type: 'tool_result', call_id: 'x' }, /success must be true or false/],
      ['register_tools without a list', 'INVALID_MESSAGE', { type: 'register_tools', tools: {} }, /tools must be an array/],
      ['resuming an unknown session', 'SESSION_ERROR', { type: 'start_session', session_id: 'no-such-session' }, /does not exist/],
      ['text_input in an unknown session', 'SESSION_ERROR', { type: 'text_input', text: 'hi', session_id: 'gone' }, /does not exist/],
    ])('%s -> %s, and the connection stays usable', async (_name, code, frame, message) => {
      const client = await stack.connect();
      client.send(frame);
      const frames = await client.until('error');
      // An error of a turn names it; one of another request names none.
      const turnId = frames.find((frame) => frame.type === 'status' && frame.status === 'processing')?.turn_id;
      expect(frames.pop()).toEqual({
        type: 'error',
        code,
        message: expect.stringMatching(message),
        ...(turnId && { turn_id: turnId }),
        timestamp: expect.stringMatching(ISO),
      });
      await usableAfterwards(client);
      await client.close();
    });

    it.each([
      ['answers HTTP 500', 'LLM_ERROR', { fault: 'http500' as const }, /HTTP 500/],
      ['answers HTTP 404 (model not loaded)', 'LLM_ERROR', { fault: 'http404' as const }, /HTTP 404/],
      ['cuts the stream', 'LLM_ERROR', { fault: 'cut' as const }, /could not be read/],
      ['never answers', 'TIMEOUT', { fault: 'hang' as const }, /within 1 s/],
    ])('when the model server %s -> %s, with no server internals', async (_name, code, fault, details) => {
      const client = await stack.connect();
      stack.llm.reply(fault);
      client.send({ type: 'text_input', text: 'hello' });
      const frames = await client.until('status', 'idle');
      const error = frames.find((frame) => frame.type === 'error');
      expect(error).toMatchObject({ type: 'error', code, details: expect.stringMatching(details) });
      expect(JSON.stringify(frames)).not.toMatch(/sk-secret|CUDA/);
      expect(frames.some((frame) => frame.type === 'llm_response')).toBe(false);
      await usableAfterwards(client);
      await client.close();
    });

    it('answers an unexpected failure with INTERNAL_ERROR and nothing of its internals', async () => {
      const prompts = stack.gateway.app.get(SystemPromptService);
      const build = prompts.build;
      prompts.build = () => {
        throw new Error('prompt template at /etc/secret/path is broken');
      };
      try {
        const client = await stack.connect();
        client.send({ type: 'text_input', text: 'hello' });
        const error = (await client.until('error')).pop();
        expect(error).toMatchObject({ code: 'INTERNAL_ERROR', message: 'Internal error' });
        expect(JSON.stringify(error)).not.toContain('/etc/secret');
        prompts.build = build;
        await usableAfterwards(client);
        await client.close();
      } finally {
        prompts.build = build;
      }
    });
  });
});

describe('LLM gateway limits (spec 11, 12)', () => {
  it('closes connections past CLOUD_MAX_CONNECTIONS with 1013', async () => {
    const stack = await startLlmStack({ CLOUD_MAX_CONNECTIONS: 2 });
    try {
      const first = await stack.connect();
      const second = await stack.connect();
      const third = await TestSocket.open(stack.gateway.ws('/'));
      expect(await third.closed).toEqual({ code: 1013, reason: 'Too many LLM-gateway connections: at most 2 (CLOUD_MAX_CONNECTIONS)' });
      await first.close();
      const replacement = await stack.connect();
      expect(replacement.sessionId).toBeDefined();
      await Promise.all([second.close(), replacement.close()]);
    } finally {
      await stack.close();
    }
  });

  it('closes a connection that sends a message over the size limit with 1009, and serves others', async () => {
    const stack = await startLlmStack({ CLOUD_MAX_MESSAGE_SIZE: 2048 });
    try {
      const client = await stack.connect();
      client.send({ type: 'text_input', text: 'x'.repeat(3000) });
      expect((await client.closed).code).toBe(1009);
      const next = await stack.connect();
      next.send({ type: 'text_input', text: 'small' });
      expect((await next.until('llm_response')).pop().content).toBe('You said: small');
      await next.close();
    } finally {
      await stack.close();
    }
  });

  it('pings every CLOUD_PING_INTERVAL and closes a silent peer after CLOUD_PING_TIMEOUT', async () => {
    const stack = await startLlmStack({ CLOUD_PING_INTERVAL: 0.1, CLOUD_PING_TIMEOUT: 0.4 });
    try {
      const silent = await TestSocket.open(stack.gateway.ws('/'), { autoPong: false });
      const lively = await stack.connect();
      let pings = 0;
      lively.socket.on('ping', () => (pings += 1));
      expect(await silent.closed).toEqual({ code: 1001, reason: 'Heartbeat timeout' });
      expect(pings).toBeGreaterThanOrEqual(2);
      expect(lively.socket.readyState).toBe(lively.socket.OPEN);
      await lively.close();
    } finally {
      await stack.close();
    }
  });

  it('keeps a peer that sends frames alive even without pongs', async () => {
    const stack = await startLlmStack({ CLOUD_PING_INTERVAL: 0.1, CLOUD_PING_TIMEOUT: 0.4 });
    try {
      const chatty = await TestSocket.open(stack.gateway.ws('/'), { autoPong: false });
      for (let i = 0; i < 8; i += 1) {
        chatty.send({ type: 'ping' });
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(chatty.socket.readyState).toBe(chatty.socket.OPEN);
      await chatty.close();
    } finally {
      await stack.close();
    }
  });

  it('refuses an upgrade without a token when auth is on, before any session exists', async () => {
    const stack = await startLlmStack({ AUTH_TOKENS: 'device' });
    try {
      await expect(TestSocket.open(stack.gateway.ws('/'))).rejects.toMatchObject({ status: 401 });
      await expect(TestSocket.open(stack.gateway.ws('/llm'), { headers: { Authorization: 'Bearer nope' } })).rejects.toMatchObject({ status: 403 });
      const client = await stack.connect('/', { Authorization: 'Bearer device' });
      client.send({ type: 'text_input', text: 'hi' });
      expect((await client.until('llm_response')).pop().content).toBe('You said: hi');
      await client.close();
    } finally {
      await stack.close();
    }
  });

  it('reports the model server unreachable as LLM_ERROR', async () => {
    const stack = await startLlmStack({ LLM_BASE_URL: 'http://127.0.0.1:9/v1/' });
    try {
      const client = await stack.connect();
      client.send({ type: 'text_input', text: 'hi' });
      const error = (await client.until('error')).pop();
      expect(error).toMatchObject({ code: 'LLM_ERROR', details: expect.stringMatching(/could not be reached/) });
      await client.close();
    } finally {
      await stack.close();
    }
  });
});
