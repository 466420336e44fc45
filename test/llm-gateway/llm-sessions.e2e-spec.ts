import { LlmClient, LlmStack, startLlmStack } from '../support/llm-stack';
import { ChatRequest } from '../support/scripted-llm';

/** The conversation a request carried, without its system message. */
const dialogue = (request: ChatRequest) => request.messages.slice(1).map((m) => `${m.role}:${m.content}`);

/** One turn, read through its closing `status: idle`; the answer. */
async function say(client: LlmClient, text: string, extra: object = {}): Promise<string> {
  client.send({ type: 'text_input', text, ...extra });
  return (await client.until('status', 'idle')).find((frame) => frame.type === 'llm_response').content;
}

describe('LLM gateway sessions', () => {
  let stack: LlmStack;

  beforeAll(async () => {
    stack = await startLlmStack({ CLOUD_SESSION_MAX_HISTORY: 4, AUTH_TOKENS: 'alice-token,bob-token' });
  });
  afterAll(() => stack.close());
  beforeEach(() => stack.llm.reset());

  const alice = (path = '/') => stack.connect(path, { Authorization: 'Bearer alice-token' });
  const bob = () => stack.connect('/', { Authorization: 'Bearer bob-token' });

  it('sends no history while enable_context is off (the default)', async () => {
    const client = await alice();
    await say(client, '我叫小明');
    await say(client, '我刚才问什么？');
    expect(dialogue(stack.llm.requests[1])).toEqual(['user:我刚才问什么？']);
    await client.close();
  });

  it('sends the last CLOUD_SESSION_MAX_HISTORY messages once enable_context is on (spec 6.3)', async () => {
    const client = await alice();
    client.send({ type: 'configure', enable_context: true, temperature: 0.2, max_tokens: 256 });
    await say(client, 'one');
    await say(client, 'two');
    await say(client, 'three');
    const last = stack.llm.requests[2];
    expect(dialogue(last)).toEqual(['user:one', 'assistant:You said: one', 'user:two', 'assistant:You said: two', 'user:three']);
    await say(client, 'four');
    expect(dialogue(stack.llm.requests[3])).toEqual(['user:two', 'assistant:You said: two', 'user:three', 'assistant:You said: three', 'user:four']);
    expect(last.temperature).toBe(0.2);
    expect(last.max_tokens).toBe(256);
    await client.close();
  });

  it('resumes a session on a new connection with its context and settings (spec 9.6)', async () => {
    const first = await alice();
    first.send({ type: 'configure', enable_context: true });
    await say(first, '我叫小明');
    const sessionId = first.sessionId;
    await first.close();

    const second = await alice('/llm');
    expect(second.sessionId).not.toBe(sessionId);
    second.send({ type: 'start_session', session_id: sessionId });
    expect((await second.until('status', 'connected')).pop().data).toEqual({ session_id: sessionId });
    await say(second, '我叫什么名字？');
    expect(dialogue(stack.llm.requests.at(-1)!)).toEqual(['user:我叫小明', 'assistant:You said: 我叫小明', 'user:我叫什么名字？']);
    await second.close();
  });

  it('keeps every session it handed out resumable after a disconnect: one that only registered tools, one that did nothing (spec 6.1, 9.6)', async () => {
    const [registered, silent, talked, configured] = [await alice(), await alice(), await alice(), await alice()];
    registered.send({ type: 'register_tools', tools: [{ name: 'get_battery', description: 'Battery level', parameters: { type: 'object' } }] });
    await registered.until('tools_registered');
    await say(talked, 'keep me');
    configured.send({ type: 'configure', language: 'fr' });
    configured.send({ type: 'ping' });
    await configured.until('pong');
    // Lost network, not a goodbye: the sockets are cut without a close frame.
    for (const client of [registered, silent, talked, configured]) client.socket.terminate();
    await Promise.all([registered, silent, talked, configured].map((client) => client.closed));

    for (const before of [registered, silent, talked, configured]) {
      const back = await alice();
      back.send({ type: 'start_session', session_id: before.sessionId });
      expect((await back.until('status', 'connected')).pop().data).toEqual({ session_id: before.sessionId });
      await say(back, 'I am back');
      await back.close();
    }
    // text_input naming the session resumes it too.
    const again = await alice();
    expect(await say(again, 'and again', { session_id: silent.sessionId })).toBe('You said: and again');
    await again.close();
  });

  it('uses the context of the session a text_input names', async () => {
    const first = await alice();
    first.send({ type: 'configure', enable_context: true });
    await say(first, 'remember the colour blue');
    const other = await alice();
    await say(other, 'which colour?', { session_id: first.sessionId });
    expect(dialogue(stack.llm.requests.at(-1)!)).toEqual([
      'user:remember the colour blue',
      'assistant:You said: remember the colour blue',
      'user:which colour?',
    ]);
    await Promise.all([first.close(), other.close()]);
  });

  it('starts a new session on start_session without an id', async () => {
    const client = await alice();
    client.send({ type: 'start_session' });
    const { data } = (await client.until('status', 'connected')).pop();
    expect(data.session_id).not.toBe(client.sessionId);
    await client.close();
  });

  it('ends a session: it cannot be resumed, and the connection gets a new one', async () => {
    const client = await alice();
    await say(client, 'hello');
    const ended = client.sessionId;
    client.send({ type: 'end_session' });
    const frames = await client.until('status', 'connected');
    expect(frames.find((frame) => frame.status === 'idle').data).toEqual({ message: 'Session ended', session_id: ended });
    const fresh = frames.pop().data.session_id;
    expect(fresh).not.toBe(ended);
    client.send({ type: 'start_session', session_id: ended });
    expect((await client.until('error')).pop()).toMatchObject({ code: 'SESSION_ERROR' });
    await say(client, 'still working');
    await client.close();
  });

  it('lets only the principal that created a session resume it', async () => {
    const owner = await alice();
    await say(owner, 'private');
    const intruder = await bob();
    intruder.send({ type: 'start_session', session_id: owner.sessionId });
    expect((await intruder.until('error')).pop()).toMatchObject({ code: 'SESSION_ERROR', message: expect.stringMatching(/belongs to another client/) });
    intruder.send({ type: 'text_input', text: 'peek', session_id: owner.sessionId });
    expect((await intruder.until('error')).pop()).toMatchObject({ code: 'SESSION_ERROR' });
    await Promise.all([owner.close(), intruder.close()]);
  });

  it('moves a session to the connection that resumes it, and gives the other a new one', async () => {
    const stale = await alice();
    await say(stale, 'before the network dropped');
    const reconnected = await alice();
    reconnected.send({ type: 'start_session', session_id: stale.sessionId });
    await reconnected.until('status', 'connected');
    const notice = await stale.next();
    expect(notice).toMatchObject({
      type: 'status',
      status: 'connected',
      data: { session_id: expect.any(String), previous_session_id: stale.sessionId, reason: 'session_resumed_elsewhere' },
    });
    expect(notice.data.session_id).not.toBe(stale.sessionId);
    await Promise.all([stale.close(), reconnected.close()]);
  });

  it('sets the response language per session', async () => {
    const client = await alice();
    client.send({ type: 'configure', language: 'ja' });
    await say(client, 'hello');
    expect(stack.llm.requests[0].messages[0].content).toContain('Always answer in Japanese (日本語)');
    const other = await alice();
    await say(other, 'hello');
    expect(stack.llm.requests[1].messages[0].content).not.toContain('Always answer in');
    await Promise.all([client.close(), other.close()]);
  });
});

describe('LLM gateway session expiry', () => {
  it('keeps CLOUD_SESSION_MAX_PER_PRINCIPAL sessions of a token, forgetting its least recently active first', async () => {
    const stack = await startLlmStack({ CLOUD_SESSION_MAX_PER_PRINCIPAL: 2, AUTH_TOKENS: 'alice-token,bob-token' });
    const as = (token: string) => stack.connect('/', { Authorization: `Bearer ${token}` });
    try {
      const [oldest, older] = [await as('alice-token'), await as('alice-token')];
      await say(oldest, 'first');
      await say(older, 'second');
      await Promise.all([oldest.close(), older.close()]);
      const bobs = await as('bob-token');
      await say(bobs, 'not counted against alice');

      const newest = await as('alice-token');
      newest.send({ type: 'start_session', session_id: oldest.sessionId });
      expect((await newest.until('error')).pop()).toMatchObject({ code: 'SESSION_ERROR' });
      newest.send({ type: 'start_session', session_id: older.sessionId });
      expect((await newest.until('status', 'connected')).pop().data).toEqual({ session_id: older.sessionId });
      await Promise.all([newest.close(), bobs.close()]);
    } finally {
      await stack.close();
    }
  });

  it('forgets a session idle for CLOUD_SESSION_TIMEOUT once its connection is gone, and keeps attached ones', async () => {
    const stack = await startLlmStack({ CLOUD_SESSION_TIMEOUT: 0.3, CLOUD_SESSION_CLEANUP_INTERVAL: 0.1 });
    try {
      const leaving = await stack.connect();
      await say(leaving, 'bye');
      await leaving.close();
      const staying = await stack.connect();
      await new Promise((resolve) => setTimeout(resolve, 700));
      staying.send({ type: 'start_session', session_id: leaving.sessionId });
      expect((await staying.until('error')).pop()).toMatchObject({ code: 'SESSION_ERROR' });
      expect(await say(staying, 'my own session is still alive')).toBe('You said: my own session is still alive');
      await staying.close();
    } finally {
      await stack.close();
    }
  });
});
