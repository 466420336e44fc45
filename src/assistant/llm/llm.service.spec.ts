import { ScriptedLlm, toolResults } from '../../../test/support/scripted-llm';
import { loadGatewayConfig } from '../../config/gateway-config';
import { GatewayError } from '../../core/errors/gateway-error';
import { ConversationEvent, LlmService } from './llm.service';

describe('LlmService', () => {
  let llm: ScriptedLlm;
  const service = (settings: Record<string, string | number> = {}) =>
    new LlmService(loadGatewayConfig({ LLM_BASE_URL: llm.baseUrl, LLM_MAX_RETRIES: 0, LLM_TIMEOUT: 2, CLOUD_LOG_LEVEL: 'ERROR', ...settings }));
  const request = { systemPrompt: 'Be brief.', messages: [{ role: 'user' as const, content: 'hi' }], tools: [], temperature: 0.5, maxTokens: 100 };

  beforeAll(async () => {
    llm = await ScriptedLlm.start();
  });
  afterAll(() => llm.close());
  beforeEach(() => llm.reset());

  /** Every event of a conversation, answering each tool round with `results`. */
  async function eventsOf(
    conversation: AsyncGenerator<ConversationEvent>,
    answerRound = (calls: { id: string }[]) => calls.map((call) => ({ callId: call.id, content: 'ok' })),
  ) {
    const events: ConversationEvent[] = [];
    for await (const event of conversation) {
      events.push(event);
      if (event.type === 'tool-round') event.continueWith(answerRound(event.calls));
    }
    return events;
  }

  it("streams the answer as text events, then the reply's end, then the answer, reasoning removed", async () => {
    llm.reply({ text: '<think>hmm</think>Hello there.' });
    const events = await eventsOf(service().converse(request));
    const text = events
      .filter((event) => event.type === 'text')
      .map((event) => (event as { delta: string }).delta)
      .join('');
    expect(text).toBe('<think>hmm</think>Hello there.');
    expect(events.slice(-2)).toEqual([
      { type: 'reply-end', durationMs: expect.any(Number), usage: { tokens: 15, reported: true } },
      { type: 'answer', text: 'Hello there.', rounds: 1 },
    ]);
    expect(llm.requests[0].messages[0]).toEqual({ role: 'system', content: 'Be brief.' });
    expect(llm.requests[0].stream_options).toEqual({ include_usage: true });
  });

  it("takes each call's tokens from the server's usage, or estimates them from the characters when it sends none", async () => {
    llm.reply({ text: 'Fine.', usage: { prompt_tokens: 120, completion_tokens: 7 } }, { text: 'x'.repeat(400), usage: false });
    const reported = await eventsOf(service().converse(request));
    expect(reported.find((event) => event.type === 'reply-end')).toMatchObject({ usage: { tokens: 127, reported: true } });
    const estimated = await eventsOf(service().converse(request));
    const usage = (estimated.find((event) => event.type === 'reply-end') as { usage: { tokens: number; reported: boolean } }).usage;
    // 400 characters written and the request's messages sent, a token per 4 characters.
    expect(usage.reported).toBe(false);
    expect(usage.tokens).toBeGreaterThan(100);
    expect(usage.tokens).toBeLessThan(130);
  });

  it('lets LLM_EXTRA_BODY replace stream_options for a server that refuses the field', async () => {
    llm.reply({ text: 'ok', usage: false });
    const events = await eventsOf(service({ LLM_EXTRA_BODY: '{"stream_options": {"include_usage": false}}' }).converse(request));
    expect(llm.requests[0].stream_options).toEqual({ include_usage: false });
    expect(events.find((event) => event.type === 'reply-end')).toMatchObject({ usage: { reported: false } });
  });

  it('waits at a tool round for its results, feeds them back, and takes a new system prompt from then on', async () => {
    llm.reply({ toolCalls: [{ id: 'c1', name: 'lookup', arguments: { q: 'x' } }] }, (chat) => ({ text: `got ${toolResults(chat).c1}` }));
    const events: ConversationEvent[] = [];
    for await (const event of service().converse({ ...request, tools: [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object' } } }] })) {
      events.push(event);
      if (event.type === 'tool-round') {
        expect(event.calls).toEqual([{ id: 'c1', name: 'lookup', arguments: '{"q":"x"}' }]);
        event.continueWith([{ callId: 'c1', content: '42' }], 'Now in French.');
      }
    }
    expect(events.at(-1)).toEqual({ type: 'answer', text: 'got 42', rounds: 2 });
    expect(llm.requests[1].messages[0]).toEqual({ role: 'system', content: 'Now in French.' });
    expect(llm.requests[1].messages.slice(-2)).toEqual([
      { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'lookup', arguments: '{"q":"x"}' } }] },
      { role: 'tool', tool_call_id: 'c1', content: '42' },
    ]);
  });

  it('offers no tools on the last of LLM_MAX_TOOL_ROUNDS calls, so the model has to answer', async () => {
    llm.reply({ toolCalls: [{ id: 'a', name: 'lookup', arguments: {} }] }, { toolCalls: [{ id: 'b', name: 'lookup', arguments: {} }] });
    const tools = [{ type: 'function' as const, function: { name: 'lookup', parameters: { type: 'object' } } }];
    const events = await eventsOf(service({ LLM_MAX_TOOL_ROUNDS: 2 }).converse({ ...request, tools }));
    expect(events.at(-1)).toMatchObject({ type: 'answer', rounds: 2 });
    expect(llm.requests.map((chat) => chat.tools?.length ?? 0)).toEqual([1, 0]);
  });

  it('fails a round left without its results rather than asking the model with a hole in the transcript', async () => {
    llm.reply({ toolCalls: [{ id: 'a', name: 'lookup', arguments: {} }] });
    const conversation = service().converse({ ...request, tools: [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object' } } }] });
    await expect(eventsOf(conversation, () => undefined as never)).rejects.toThrow(/without its results/);
  });

  it.each([
    ['http500', 'The model server answered HTTP 500'],
    ['garbage', "The model's answer could not be read: it was not an event stream of chunks"],
  ] as const)('words a model server that fails (%s) as LLM_ERROR, never with its body', async (fault, detail) => {
    llm.reply({ fault });
    const failure = await eventsOf(service().converse(request)).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(GatewayError);
    expect(failure).toMatchObject({ code: 'LLM_ERROR', details: detail });
  });

  it('ends the model request when the caller leaves the conversation early', async () => {
    llm.reply({ text: 'One. Two. Three. Four. Five. Six.', pace: { firstTokenMs: 0, tokensPerSecond: 50 } });
    for await (const event of service().converse(request)) if (event.type === 'text') break;
    for (let waited = 0; llm.streams[0]?.closedEarlyAt === undefined && waited < 2000; waited += 20) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(llm.streams[0].closedEarlyAt).toBeDefined();
    expect(llm.streams[0].finished).toBe(false);
  });

  it("stops at once when the caller's signal aborts, with the caller's reason", async () => {
    llm.reply({ text: 'slow', delayMs: 1500 });
    const abort = new AbortController();
    const reason = new Error('cancelled by the user');
    setTimeout(() => abort.abort(reason), 50);
    await expect(eventsOf(service().converse({ ...request, signal: abort.signal }))).rejects.toBe(reason);
  });
});
