import { getEventListeners } from 'events';
import { ConnectionRegistry } from '../../src/core/ws/connection-registry';
import type { LlmConnectionState } from '../../src/llm-gateway/llm-connection';
import { LlmClient, LlmStack, startLlmStack } from '../support/llm-stack';
import { lastUserText, Pace } from '../support/scripted-llm';
import { SPEC_BATTERY_TOOL } from '../support/spec-clients';

/** A real model's pace: the first token after 300 ms, then 40 tokens a second. */
const REALISTIC: Pace = { firstTokenMs: 300, tokensPerSecond: 40 };

const FIVE_SENTENCES = 'Beijing is sunny today. The high is 25 degrees. A light wind blows from the north. Rain may come on Friday. Enjoy the weekend!';

/** Every frame a client receives, with the `performance.now()` time it arrived. */
function recordArrivals(client: LlmClient): { frame: any; at: number }[] {
  const arrivals: { frame: any; at: number }[] = [];
  client.socket.on('message', (data: Buffer) => arrivals.push({ frame: JSON.parse(data.toString()), at: performance.now() }));
  return arrivals;
}

/** The gateway's own connection of a client (found by its session). */
function connectionOf(stack: LlmStack, client: LlmClient) {
  return stack.gateway.app
    .get(ConnectionRegistry)
    .list<LlmConnectionState>('llm')
    .find((connection) => connection.state.sessionId === client.sessionId)!;
}

describe('LLM gateway: live turns', () => {
  let stack: LlmStack;

  beforeAll(async () => {
    stack = await startLlmStack({ TOOL_FILLER_DELAY: 0.2, CLIENT_TOOL_TIMEOUT: 5, LLM_EXTRA_BODY: '{"chat_template_kwargs":{"enable_thinking":false}}' });
  });
  afterAll(() => stack.close());
  beforeEach(() => stack.llm.reset());

  describe('sentence streaming (configure {stream: true})', () => {
    it('sends each sentence as soon as the model has written it, then the final answer that joins them', async () => {
      const client = await stack.connect();
      const arrivals = recordArrivals(client);
      client.send({ type: 'configure', stream: true });
      stack.llm.reply({ text: FIVE_SENTENCES, pace: REALISTIC });
      client.send({ type: 'text_input', text: 'Weather?', turn_id: 'weather-1' });
      const frames = await client.until('status', 'idle');

      const partials = frames.filter((frame) => frame.type === 'llm_response' && frame.is_final === false);
      const final = frames.find((frame) => frame.type === 'llm_response' && frame.is_final === true);
      expect(partials.length).toBeGreaterThanOrEqual(3);
      expect(partials.map((frame) => frame.seq)).toEqual(partials.map((_frame, index) => index));
      expect(partials.map((frame) => frame.content).join('')).toBe(final.content);
      expect(final.content).toBe(FIVE_SENTENCES);
      expect(frames.every((frame) => frame.turn_id === 'weather-1')).toBe(true);
      expect(frames.indexOf(final)).toBeGreaterThan(frames.indexOf(partials.at(-1)));
      expect(final.timing).toEqual({
        first_token_ms: expect.any(Number),
        first_sentence_ms: expect.any(Number),
        total_ms: expect.any(Number),
        llm_ms: expect.any(Number),
        tools_ms: 0,
      });
      expect(final.timing.first_token_ms).toBeGreaterThanOrEqual(300);

      // The first sentence left within 50 ms of the token that ended it.
      const [stream] = stack.llm.streams;
      const written = stream.sent.map((piece) => piece.text).join('');
      const firstSentence = partials[0].content;
      let upTo = '';
      const lastToken = stream.sent.find((piece) => (upTo += piece.text).trimStart().length >= firstSentence.length)!;
      expect(written.startsWith(firstSentence)).toBe(true);
      const arrived = arrivals.find((arrival) => arrival.frame.type === 'llm_response' && arrival.frame.seq === 0)!;
      expect(arrived.at - lastToken.at).toBeLessThan(50);
      await client.close();
    });

    it("sends the spec's frames alone without streaming, each with the turn's id, and the timing on the answer", async () => {
      const client = await stack.connect();
      stack.llm.reply({ text: FIVE_SENTENCES });
      client.send({ type: 'text_input', text: 'Weather?' });
      const frames = await client.until('status', 'idle');
      expect(frames.map((frame) => `${frame.type}${frame.status ? ` ${frame.status}` : ''}`)).toEqual(['status processing', 'llm_response', 'status idle']);
      const turnId = frames[0].turn_id;
      expect(turnId).toEqual(expect.any(String));
      expect(frames.every((frame) => frame.turn_id === turnId)).toBe(true);
      expect(frames[1]).toMatchObject({ content: FIVE_SENTENCES, is_final: true, tool_calls: [], timing: { total_ms: expect.any(Number) } });
      expect(frames[1]).not.toHaveProperty('seq');
      await client.close();
    });

    it('streams what the model says before a tool round, and a filler while a slow round runs', async () => {
      const client = await stack.connect();
      client.send({ type: 'register_tools', tools: [SPEC_BATTERY_TOOL] });
      await client.until('tools_registered');
      client.send({ type: 'configure', stream: true, language: 'en' });
      stack.llm.reply({ text: 'Let me check the battery.', toolCalls: [{ id: 'b', name: 'get_battery', arguments: {} }] }, { text: 'It is at 85%.' });
      client.send({ type: 'text_input', text: 'Battery?' });
      const before = await client.until('tool_callback');
      expect(before.filter((frame) => frame.type === 'llm_response').map((frame) => frame.content)).toEqual(['Let me check the battery.']);
      const callback = before.at(-1);
      const filler = await client.next(2000);
      expect(filler).toMatchObject({ type: 'llm_response', is_final: false, seq: 1, content: ' One moment, let me check.' });
      client.send({ type: 'tool_result', call_id: callback.call_id, success: true, result: { level: 85 } });
      const after = await client.until('status', 'idle');
      const final = after.find((frame) => frame.is_final === true);
      expect(final.content).toBe('Let me check the battery. One moment, let me check. It is at 85 percent.');
      expect(final.timing.tools_ms).toBeGreaterThanOrEqual(200);
      await client.close();
    });
  });

  describe('cancel', () => {
    it('stops a streamed answer at once: the model request closes, nothing more of the turn comes, the history keeps what was spoken', async () => {
      const client = await stack.connect();
      client.send({ type: 'configure', stream: true, enable_context: true });
      stack.llm.reply({ text: FIVE_SENTENCES, pace: REALISTIC });
      client.send({ type: 'text_input', text: 'Weather?', turn_id: 't1' });
      const firstSentence = (await client.until('llm_response')).pop();
      const cancelledAt = performance.now();
      client.send({ type: 'cancel', spoken: 'Beijing is sunny' });
      const ending = await client.until('status', 'idle');
      expect(ending.slice(-2)).toEqual([
        { type: 'status', status: 'cancelled', data: { turn_id: 't1' }, turn_id: 't1', timestamp: expect.any(String) },
        { type: 'status', status: 'idle', data: expect.any(Object), turn_id: 't1', timestamp: expect.any(String) },
      ]);
      expect(ending.filter((frame) => frame.type === 'llm_response' && frame.is_final)).toEqual([]);
      await client.expectSilence(300);
      // The answer would go on for seconds: the model request closes as soon as the cancel is read.
      expect(stack.llm.streams[0].closedEarlyAt! - cancelledAt).toBeLessThan(500);
      expect(firstSentence.content).toBe('Beijing is sunny today.');

      stack.llm.reply((request) => ({
        text: `history: ${request.messages
          .filter((message) => message.role !== 'system')
          .map((message) => `${message.role}=${message.content}`)
          .join('|')}`,
      }));
      client.send({ type: 'configure', stream: false });
      client.send({ type: 'text_input', text: 'And tomorrow?' });
      const answer = (await client.until('llm_response')).pop();
      expect(answer.content).toContain('user=Weather?|assistant=Beijing is sunny|user=And tomorrow?');
      await client.close();
    });

    it('without spoken, keeps in the history the sentences that were sent', async () => {
      const client = await stack.connect();
      client.send({ type: 'configure', stream: true, enable_context: true });
      stack.llm.reply({ text: FIVE_SENTENCES, pace: REALISTIC });
      client.send({ type: 'text_input', text: 'Weather?' });
      await client.until('llm_response');
      client.send({ type: 'cancel' });
      await client.until('status', 'idle');
      stack.llm.reply((request) => ({ text: String(request.messages.find((message) => message.role === 'assistant')?.content) }));
      client.send({ type: 'text_input', text: 'Again' });
      const frames = await client.until('status', 'idle');
      expect(frames.find((frame) => frame.is_final)?.content).toBe('Beijing is sunny today.');
      await client.close();
    });

    it('withdraws a pending device tool call: a late tool_result is refused', async () => {
      const client = await stack.connect();
      client.send({ type: 'register_tools', tools: [SPEC_BATTERY_TOOL] });
      await client.until('tools_registered');
      stack.llm.reply({ toolCalls: [{ id: 'b', name: 'get_battery', arguments: {} }] });
      client.send({ type: 'text_input', text: 'Battery?', turn_id: 'b1' });
      const callback = (await client.until('tool_callback')).pop();
      expect(callback.turn_id).toBe('b1');
      expect(connectionOf(stack, client).state.callbacks.size).toBe(1);
      client.send({ type: 'cancel', turn_id: 'b1' });
      await client.until('status', 'idle');
      expect(connectionOf(stack, client).state.callbacks.size).toBe(0);
      client.send({ type: 'tool_result', call_id: callback.call_id, success: true, result: { level: 85 } });
      expect(await client.next()).toMatchObject({ type: 'error', code: 'INVALID_MESSAGE', message: expect.stringMatching(/Unknown or expired call_id/) });
      expect(stack.llm.requests).toHaveLength(1);
      await client.close();
    });

    it('answers idle when no turn is running, and ends a waiting turn at once, before the running one', async () => {
      const client = await stack.connect();
      client.send({ type: 'cancel' });
      expect(await client.next()).toMatchObject({ type: 'status', status: 'idle' });
      stack.llm.reply({ text: 'slow', delayMs: 300 });
      client.send({ type: 'text_input', text: 'one', turn_id: 'first' });
      client.send({ type: 'text_input', text: 'two', turn_id: 'second' });
      client.send({ type: 'cancel', turn_id: 'second' });
      const frames = await client.until('status', 'idle');
      expect(frames.filter((frame) => frame.turn_id === 'second').map((frame) => frame.status)).toEqual(['cancelled', 'idle']);
      const first = [...frames.filter((frame) => frame.turn_id === 'first'), ...(await client.until('status', 'idle'))];
      expect(first.map((frame) => [frame.turn_id, frame.status ?? frame.type])).toEqual([
        ['first', 'processing'],
        ['first', 'llm_response'],
        ['first', 'idle'],
      ]);
      expect(stack.llm.requests.map(lastUserText)).toEqual(['one']);
      await client.close();
    });

    describe.each([
      { stream: false, named: false },
      { stream: false, named: true },
      { stream: true, named: false },
      { stream: true, named: true },
    ])('a cancel right behind its text_input (stream $stream, turn_id given $named)', ({ stream, named }) => {
      it('ends each of 100 turns with cancelled then idle, and no answer of them ever comes', async () => {
        const client = await stack.connect();
        client.send({ type: 'configure', stream });
        // A turn that starts before its cancel arrives must still be running when it does.
        stack.llm.reply(...Array.from({ length: 100 }, () => ({ text: FIVE_SENTENCES, pace: REALISTIC })));
        for (let i = 0; i < 100; i++) {
          client.send({ type: 'text_input', text: `turn ${i}`, ...(named && { turn_id: `q${i}` }) });
          client.send({ type: 'cancel', ...(named && { turn_id: `q${i}` }) });
        }
        const frames: any[] = [];
        while (frames.filter((frame) => frame.status === 'idle').length < 100) frames.push(await client.next(8000));
        await client.expectSilence(700);

        expect(frames.filter((frame) => frame.type === 'error' || frame.type === 'llm_response' || frame.turn_id === undefined)).toEqual([]);
        const byTurn = new Map<string, string[]>();
        for (const frame of frames) byTurn.set(frame.turn_id, [...(byTurn.get(frame.turn_id) ?? []), frame.status]);
        expect(byTurn.size).toBe(100);
        if (named) expect([...byTurn.keys()]).toEqual(expect.arrayContaining(Array.from({ length: 100 }, (_, i) => `q${i}`)));
        for (const statuses of byTurn.values()) expect(statuses.filter((status) => status !== 'processing')).toEqual(['cancelled', 'idle']);
        expect(connectionOf(stack, client).state.turns.size).toBe(0);

        stack.llm.reset();
        client.send({ type: 'text_input', text: 'still here?' });
        expect((await client.until('status', 'idle')).find((frame) => frame.is_final)?.content).toBe('You said: still here?');
        await client.close();
      });
    });

    it('stops 20 streamed answers, each cancelled after its first partial, with nothing of any after its cancel', async () => {
      const client = await stack.connect();
      client.send({ type: 'configure', stream: true });
      for (let i = 0; i < 20; i++) {
        stack.llm.reply({ text: FIVE_SENTENCES, pace: { firstTokenMs: 0, tokensPerSecond: 200 } });
        client.send({ type: 'text_input', text: `turn ${i}` });
        const partial = (await client.until('llm_response')).pop();
        expect(partial).toMatchObject({ is_final: false, seq: 0 });
        client.send({ type: 'cancel' });
        const rest = await client.until('status', 'idle');
        expect(rest.filter((frame) => frame.turn_id !== partial.turn_id)).toEqual([]);
        expect(rest.slice(-2).map((frame) => frame.status)).toEqual(['cancelled', 'idle']);
        expect(rest.filter((frame) => frame.is_final)).toEqual([]);
      }
      await client.expectSilence(300);
      expect(connectionOf(stack, client).state.turns.size).toBe(0);
      await client.close();
    });

    it('leaves no timer, pending call or listener behind after a hundred cancels', async () => {
      const client = await stack.connect();
      client.send({ type: 'register_tools', tools: [SPEC_BATTERY_TOOL] });
      await client.until('tools_registered');
      const connection = connectionOf(stack, client);
      const { state } = connection;
      const handlesBefore = process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;
      for (let i = 0; i < 100; i++) {
        stack.llm.reply(i % 2 === 0 ? { toolCalls: [{ id: `b${i}`, name: 'get_battery', arguments: {} }] } : { text: FIVE_SENTENCES, pace: REALISTIC });
        client.send({ type: 'text_input', text: `turn ${i}`, turn_id: `c${i}` });
        await client.until(i % 2 === 0 ? 'tool_callback' : 'status', i % 2 === 0 ? undefined : 'processing');
        client.send({ type: 'cancel', turn_id: `c${i}` });
        await client.until('status', 'idle');
      }
      expect(state.callbacks.size).toBe(0);
      expect(state.turns.size).toBe(0);
      expect(getEventListeners(connection.signal, 'abort').length).toBeLessThanOrEqual(1);
      // The scripted model's own pauses (the 300 ms before a first token) end by themselves.
      await new Promise((resolve) => setTimeout(resolve, 500));
      const handlesAfter = process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;
      expect(handlesAfter - handlesBefore).toBeLessThanOrEqual(2);
      await client.close();
    });
  });

  describe('barge-in (configure {barge_in: true})', () => {
    it('cancels the running turn when the user speaks again, and starts the new one', async () => {
      const client = await stack.connect();
      client.send({ type: 'configure', stream: true, barge_in: true });
      stack.llm.reply({ text: FIVE_SENTENCES, pace: REALISTIC }, { text: 'New answer.' });
      client.send({ type: 'text_input', text: 'Weather?', turn_id: 'old' });
      await client.until('llm_response');
      client.send({ type: 'text_input', text: 'Stop, what time is it?', turn_id: 'new' });
      const old = await client.until('status', 'idle');
      expect(old.slice(-2).map((frame) => [frame.turn_id, frame.status])).toEqual([
        ['old', 'cancelled'],
        ['old', 'idle'],
      ]);
      const fresh = await client.until('status', 'idle');
      expect(fresh.every((frame) => frame.turn_id === 'new')).toBe(true);
      expect(fresh.find((frame) => frame.is_final)?.content).toBe('New answer.');
      expect(stack.llm.streams[0].closedEarlyAt).toBeDefined();
      await client.close();
    });
  });

  describe('reasoning models', () => {
    it('never speaks reasoning_content, thinking blocks or leaked tool-call markup, nor keeps them in the history', async () => {
      const client = await stack.connect();
      client.send({ type: 'configure', stream: true, enable_context: true });
      stack.llm.reply({
        reasoning: 'The user wants the weather; it is sunny.',
        text: '<think>more thoughts</think>It is sunny.<tool_call>{"name":"x"}</tool_call> Enjoy!',
      });
      client.send({ type: 'text_input', text: 'Weather?' });
      const frames = await client.until('status', 'idle');
      expect(frames.filter((frame) => frame.type === 'llm_response').map((frame) => frame.content)).toEqual(['It is sunny.', ' Enjoy!', 'It is sunny. Enjoy!']);
      expect(stack.llm.requests[0]).toMatchObject({ chat_template_kwargs: { enable_thinking: false } });
      stack.llm.reply((request) => ({ text: JSON.stringify(request.messages.slice(1)) }));
      client.send({ type: 'configure', clean_response: false });
      client.send({ type: 'text_input', text: 'Again' });
      const history = (await client.until('status', 'idle')).find((frame) => frame.is_final).content;
      expect(history).not.toMatch(/think|thoughts|user wants|tool_call/);
      await client.close();
    });

    it('fails a reply that has reasoning but no answer with LLM_ERROR', async () => {
      const client = await stack.connect();
      stack.llm.reply({ reasoning: 'Thinking about it forever', text: '' });
      client.send({ type: 'text_input', text: 'Hello?' });
      const frames = await client.until('status', 'idle');
      expect(frames.find((frame) => frame.type === 'error')).toMatchObject({
        code: 'LLM_ERROR',
        details: 'The model wrote only its reasoning and no answer',
        turn_id: frames[0].turn_id,
      });
      await client.close();
    });
  });

  describe('bad input is INVALID_MESSAGE, and the connection stays usable', () => {
    it.each([
      ['cancel naming an unknown turn', { type: 'cancel', turn_id: 'nope' }, /No turn "nope" is running or waiting/],
      ['cancel with a malformed turn_id', { type: 'cancel', turn_id: 42 }, /turn_id must be a non-empty string/],
      ['cancel with spoken of a wrong type', { type: 'cancel', spoken: ['x'] }, /spoken must be a string/],
      ['stream that is not a boolean', { type: 'configure', stream: 'yes' }, /stream must be true or false/],
      ['barge_in that is not a boolean', { type: 'configure', barge_in: 1 }, /barge_in must be true or false/],
      ['text_input with a malformed turn_id', { type: 'text_input', text: 'hi', turn_id: '' }, /turn_id must be a non-empty string/],
    ])('%s', async (_name, frame, message) => {
      const client = await stack.connect();
      client.send(frame);
      expect(await client.next()).toMatchObject({ type: 'error', code: 'INVALID_MESSAGE', message: expect.stringMatching(message) });
      client.send({ type: 'text_input', text: 'still there?' });
      expect((await client.until('llm_response')).pop().content).toBe('You said: still there?');
      await client.close();
    });

    it('refuses spoken longer than the answer so far, and the turn goes on', async () => {
      const client = await stack.connect();
      client.send({ type: 'configure', stream: true });
      stack.llm.reply({ text: FIVE_SENTENCES, pace: REALISTIC });
      client.send({ type: 'text_input', text: 'Weather?' });
      await client.until('llm_response');
      client.send({ type: 'cancel', spoken: FIVE_SENTENCES.repeat(2) });
      const frames = await client.until('status', 'idle');
      expect(frames.find((frame) => frame.type === 'error')).toMatchObject({ code: 'INVALID_MESSAGE', message: 'spoken is longer than the answer so far' });
      expect(frames.find((frame) => frame.is_final)?.content).toBe(FIVE_SENTENCES);
      await client.close();
    });
  });
});
