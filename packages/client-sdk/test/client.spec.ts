import { WebSocket } from 'ws';
import { CLOSE_REPLACED, LlmGatewayClient, LlmGatewayClientEvents, LlmGatewayClientOptions, LlmGatewayError } from '../src';
import { ScriptedConnection, ScriptedGateway } from './scripted-gateway';

const BATTERY = {
  name: 'get_battery',
  description: 'Battery level',
  parameters: { type: 'object', properties: {} },
  handler: () => ({ level: 85 }),
};

/** Records every event of the given types, in order. */
function record<K extends keyof LlmGatewayClientEvents>(client: LlmGatewayClient, ...types: K[]): [K, LlmGatewayClientEvents[K]][] {
  const seen: [K, LlmGatewayClientEvents[K]][] = [];
  for (const type of types) client.on(type, (payload) => seen.push([type, payload]));
  return seen;
}

function rejection(promise: Promise<unknown>): Promise<LlmGatewayError> {
  return promise.then(
    () => {
      throw new Error('Expected a rejection');
    },
    (error: LlmGatewayError) => error,
  );
}

describe('LlmGatewayClient', () => {
  let gateway: ScriptedGateway;
  const clients: LlmGatewayClient[] = [];

  beforeEach(async () => {
    gateway = await ScriptedGateway.start();
  });

  afterEach(async () => {
    await Promise.all(clients.splice(0).map((client) => client.close()));
    await gateway.close();
  });

  function newClient(options: Partial<LlmGatewayClientOptions> = {}): LlmGatewayClient {
    const client = new LlmGatewayClient({ url: gateway.url, reconnect: { initialDelayMs: 20, maxDelayMs: 50 }, ...options });
    clients.push(client);
    return client;
  }

  async function connected(options: Partial<LlmGatewayClientOptions> = {}): Promise<[LlmGatewayClient, ScriptedConnection]> {
    const client = newClient(options);
    const [sessionId, connection] = await Promise.all([client.connect(), gateway.accept()]);
    expect(sessionId).toMatch(/^session-\d+$/);
    return [client, connection];
  }

  /** Answers the turn the client sent like the gateway does. */
  function answerTurn(connection: ScriptedConnection, content: string): void {
    connection.status('processing', { message: 'Processing your request...' });
    connection.send({ type: 'llm_response', content, tool_calls: [], is_final: true });
    connection.status('idle', { session_id: 'session-1' });
  }

  describe('connecting', () => {
    it('does not reconnect when a newer connection of the same device replaced it (close 4409)', async () => {
      const [client, connection] = await connected();
      const seen = record(client, 'disconnected', 'reconnecting');
      connection.socket.close(CLOSE_REPLACED, 'Replaced: this device connected again');
      await connection.closed;
      await expect(gateway.accept(500)).rejects.toThrow(/No client connected/);
      expect(seen).toEqual([['disconnected', { code: 4409, reason: 'Replaced: this device connected again', willReconnect: false }]]);
      expect(client.state).toBe('closed');
    });

    it("resolves with the gateway's session and reports the state changes", async () => {
      const client = newClient();
      const seen = record(client, 'state', 'session');
      expect(client.state).toBe('idle');
      const [sessionId] = await Promise.all([client.connect(), gateway.accept()]);
      expect(sessionId).toBe('session-1');
      expect(client.sessionId).toBe('session-1');
      expect(seen).toEqual([
        ['state', 'connecting'],
        ['state', 'open'],
        ['session', { sessionId: 'session-1', reason: 'connected' }],
      ]);
      await client.close();
      expect(client.state).toBe('closed');
    });

    it('sends the token as a bearer header when it loaded ws itself, and in the query when told to', async () => {
      const [, byHeader] = await connected({ token: 's3cret' });
      expect(byHeader.request.headers.authorization).toBe('Bearer s3cret');
      expect(byHeader.request.url).toBe('/');
      const [, byQuery] = await connected({ token: 's3cret', tokenIn: 'query' });
      expect(byQuery.request.headers.authorization).toBeUndefined();
      expect(byQuery.request.url).toBe('/?token=s3cret');
    });

    it('puts the token in the query for a WebSocket class it was given', async () => {
      const [, connection] = await connected({ token: 'a b', WebSocket });
      expect(connection.request.url).toBe('/?token=a+b');
    });

    it('fails with CONNECT_FAILED and the reason when the gateway refuses the upgrade', async () => {
      gateway.refuseWith = 403;
      const client = newClient();
      const error = await rejection(client.connect());
      expect(error).toBeInstanceOf(LlmGatewayError);
      expect(error.code).toBe('CONNECT_FAILED');
      expect(error.message).toMatch(/Unexpected server response: 403/);
      expect(client.state).toBe('closed');
    });

    it('fails with CONNECT_FAILED when no session comes in time, and closes the socket', async () => {
      // A server that accepts the socket but never says "connected".
      const { WebSocketServer } = await import('ws');
      const silent = new WebSocketServer({ host: '127.0.0.1', port: 0 });
      await new Promise((resolve) => silent.once('listening', resolve));
      const closed = new Promise((resolve) => silent.once('connection', (socket) => socket.once('close', resolve)));
      const quiet = new LlmGatewayClient({ url: `ws://127.0.0.1:${(silent.address() as { port: number }).port}`, connectTimeoutMs: 100 });
      const error = await rejection(quiet.connect());
      expect(error.code).toBe('CONNECT_FAILED');
      expect(error.message).toMatch(/No session from the gateway within 100 ms/);
      await closed;
      await new Promise((resolve) => silent.close(resolve));
      expect(quiet.state).toBe('closed');
    });

    it('refuses requests before connect() and after close()', async () => {
      const client = newClient();
      expect((await rejection(client.sendText('hi'))).code).toBe('NOT_CONNECTED');
      await Promise.all([client.connect(), gateway.accept()]);
      await client.close();
      expect((await rejection(client.ping())).code).toBe('NOT_CONNECTED');
    });

    it('checks its options', () => {
      expect(() => new LlmGatewayClient({ url: 'http://localhost:9400' })).toThrow('url must be a ws:// or wss:// URL, got "http://localhost:9400"');
      expect(() => new LlmGatewayClient({ url: 'localhost' })).toThrow(/absolute ws:\/\//);
      expect(() => new LlmGatewayClient({ url: 'ws://x', toolTimeoutMs: 0 })).toThrow(/toolTimeoutMs must be a positive number/);
      expect(() => new LlmGatewayClient({ url: 'ws://x', reconnect: { factor: 0.5 } })).toThrow(/factor must be 1 or more/);
    });
  });

  describe('turns', () => {
    it("resolves with the turn's first answer and reports every frame both ways", async () => {
      const [client, connection] = await connected();
      const frames = record(client, 'frame');
      const events = record(client, 'status', 'llm_response', 'tool_call');
      const answer = client.sendText('hello');
      expect(await connection.next()).toEqual({ type: 'text_input', text: 'hello', turn_id: expect.stringMatching(/^turn-/) });
      connection.status('processing');
      connection.send({ type: 'tool_call', tool_name: 'get_current_time', arguments: {}, result: '10:00', success: true, duration_ms: 1 });
      connection.send({ type: 'llm_response', content: 'It is ten.', tool_calls: [], is_final: true });
      connection.send({ type: 'llm_response', content: 'A second answer nobody asked for', tool_calls: [], is_final: true });
      connection.status('idle');
      expect(await answer).toBe('It is ten.');
      expect(events.map(([type, frame]) => `${type}:${(frame as any).status ?? (frame as any).content ?? (frame as any).tool_name}`)).toEqual([
        'status:processing',
        'tool_call:get_current_time',
        'llm_response:It is ten.',
        'llm_response:A second answer nobody asked for',
        'status:idle',
      ]);
      const log = frames.map(([, entry]) => entry);
      expect(log[0]).toMatchObject({
        direction: 'out',
        text: expect.stringMatching(/^{"type":"text_input","text":"hello","turn_id":"turn-1-/),
        frame: { type: 'text_input' },
      });
      expect(log.slice(1).every((entry) => entry.direction === 'in' && entry.at instanceof Date)).toBe(true);
      expect(log).toHaveLength(6);
    });

    it("rejects with the gateway's code and details when the turn fails, once the turn is over", async () => {
      const [client, connection] = await connected();
      const answer = rejection(client.sendText('hello'));
      await connection.next();
      connection.status('processing');
      connection.send({ type: 'error', code: 'LLM_ERROR', message: 'The model server failed', details: 'HTTP 500' });
      connection.send({ type: 'error', code: 'TIMEOUT', message: 'second' });
      connection.status('idle');
      const error = await answer;
      expect(error).toMatchObject({ code: 'LLM_ERROR', details: 'HTTP 500', message: 'LLM_ERROR: The model server failed' });
      expect(error.frame).toMatchObject({ type: 'error', code: 'LLM_ERROR' });
    });

    it('does not blame a running turn for an INVALID_MESSAGE that answers something else', async () => {
      const [client, connection] = await connected();
      const errors = record(client, 'error');
      const answer = client.sendText('hello');
      await connection.next();
      connection.status('processing');
      connection.send({ type: 'error', code: 'INVALID_MESSAGE', message: 'Unknown or expired call_id "x"' });
      connection.send({ type: 'llm_response', content: 'fine', tool_calls: [], is_final: true });
      connection.status('idle');
      expect(await answer).toBe('fine');
      expect(errors).toHaveLength(1);
    });

    it('hears a streaming turn sentence by sentence, and resolves with the final answer and its timing', async () => {
      const [client, connection] = await connected();
      const sentences = record(client, 'sentence');
      const heard: [string, number][] = [];
      const turn = client.sendTurn('weather?', { onSentence: (sentence, seq) => heard.push([sentence, seq]) });
      const { turn_id } = await connection.next();
      const timing = { first_token_ms: 300, first_sentence_ms: 320, total_ms: 900, llm_ms: 880, tools_ms: 0 };
      connection.send({ type: 'status', status: 'processing', data: {}, turn_id });
      connection.send({ type: 'llm_response', content: 'It is sunny.', tool_calls: [], is_final: false, seq: 0, turn_id });
      connection.send({ type: 'llm_response', content: ' Take a hat.', tool_calls: [], is_final: false, seq: 1, turn_id });
      connection.send({ type: 'llm_response', content: 'It is sunny. Take a hat.', tool_calls: [], is_final: true, timing, turn_id });
      connection.send({ type: 'status', status: 'idle', data: {}, turn_id });
      expect(await turn).toEqual({
        turnId: turn_id,
        content: 'It is sunny. Take a hat.',
        sentences: ['It is sunny.', ' Take a hat.'],
        toolCalls: [],
        timing,
        historySaved: true,
        cancelled: false,
      });
      expect(heard).toEqual([
        ['It is sunny.', 0],
        [' Take a hat.', 1],
      ]);
      expect(sentences.map(([, event]) => event)).toEqual([
        { turnId: turn_id, content: 'It is sunny.', seq: 0 },
        { turnId: turn_id, content: ' Take a hat.', seq: 1 },
      ]);
    });

    it('cancels the running turn: sendText rejects with TURN_CANCELLED, sendTurn tells what was said', async () => {
      const [client, connection] = await connected();
      const answer = rejection(client.sendText('weather?'));
      const { turn_id } = await connection.next();
      connection.send({ type: 'status', status: 'processing', data: {}, turn_id });
      connection.send({ type: 'llm_response', content: 'It is sunny.', tool_calls: [], is_final: false, seq: 0, turn_id });
      await client.cancel({ spoken: 'It is' });
      expect(await connection.next()).toEqual({ type: 'cancel', spoken: 'It is' });
      connection.send({ type: 'status', status: 'cancelled', data: { turn_id }, turn_id });
      connection.send({ type: 'status', status: 'idle', data: {}, turn_id });
      expect(await answer).toMatchObject({ code: 'TURN_CANCELLED' });

      const turn = client.sendTurn('again');
      const second = await connection.next();
      await client.cancel({ turnId: second.turn_id });
      expect(await connection.next()).toEqual({ type: 'cancel', turn_id: second.turn_id });
      connection.send({ type: 'status', status: 'cancelled', data: { turn_id: second.turn_id }, turn_id: second.turn_id });
      connection.send({ type: 'status', status: 'idle', data: {}, turn_id: second.turn_id });
      expect(await turn).toMatchObject({ turnId: second.turn_id, cancelled: true, content: '', sentences: [] });
      await expect(client.cancel({ spoken: 5 as unknown as string })).rejects.toThrow('spoken must be a string');
    });

    it('with barge-in, sends a new turn at once: the gateway cancels the one running', async () => {
      const [client, connection] = await connected();
      await client.configure({ barge_in: true });
      expect(await connection.next()).toEqual({ type: 'configure', barge_in: true });
      const first = client.sendTurn('one');
      const old = await connection.next();
      connection.send({ type: 'status', status: 'processing', data: {}, turn_id: old.turn_id });
      const second = client.sendText('two');
      const fresh = await connection.next();
      expect(fresh).toMatchObject({ type: 'text_input', text: 'two' });
      connection.send({ type: 'status', status: 'cancelled', data: { turn_id: old.turn_id }, turn_id: old.turn_id });
      connection.send({ type: 'status', status: 'idle', data: {}, turn_id: old.turn_id });
      connection.send({ type: 'status', status: 'processing', data: {}, turn_id: fresh.turn_id });
      connection.send({ type: 'llm_response', content: 'second', tool_calls: [], is_final: true, turn_id: fresh.turn_id });
      connection.send({ type: 'status', status: 'idle', data: {}, turn_id: fresh.turn_id });
      expect(await first).toMatchObject({ cancelled: true });
      expect(await second).toBe('second');
    });

    it('fails a turn the gateway refused before it began, and goes on with the next', async () => {
      const [client, connection] = await connected();
      const refused = rejection(client.sendText('one'));
      const next = client.sendText('two');
      await connection.next();
      connection.send({ type: 'error', code: 'INVALID_MESSAGE', message: 'Too many requests waiting' });
      expect((await refused).code).toBe('INVALID_MESSAGE');
      expect(await connection.next()).toEqual({ type: 'text_input', text: 'two', turn_id: expect.stringMatching(/^turn-/) });
      answerTurn(connection, 'second');
      expect(await next).toBe('second');
    });

    it('sends turns one at a time, in the order they were asked for; configure needs no turn to end', async () => {
      const [client, connection] = await connected();
      const first = client.sendText('one');
      const configured = client.configure({ temperature: 0.2 });
      const second = client.sendText('two');
      const configuredLater = client.configure({ max_tokens: 100 });
      expect(await connection.next()).toEqual({ type: 'text_input', text: 'one', turn_id: expect.stringMatching(/^turn-/) });
      expect(await connection.next()).toEqual({ type: 'configure', temperature: 0.2 });
      await configured;
      await connection.expectSilence();
      answerTurn(connection, 'first');
      expect(await first).toBe('first');
      expect(await connection.next()).toEqual({ type: 'text_input', text: 'two', turn_id: expect.stringMatching(/^turn-/) });
      expect(await connection.next()).toEqual({ type: 'configure', max_tokens: 100 });
      await configuredLater;
      answerTurn(connection, 'second');
      expect(await second).toBe('second');
    });

    it('does not hand a configure failure to the turn that follows it', async () => {
      const [client, connection] = await connected();
      const errors = record(client, 'error');
      await client.configure({ enable_context: true });
      const answer = client.sendText('hi');
      expect(await connection.next()).toEqual({ type: 'configure', enable_context: true });
      await connection.next();
      connection.send({ type: 'error', code: 'SESSION_ERROR', message: 'Session store unavailable' });
      answerTurn(connection, 'still answered');
      expect(await answer).toBe('still answered');
      expect(errors.map(([, frame]) => frame.code)).toEqual(['SESSION_ERROR']);
    });

    it('checks text and settings before sending anything', async () => {
      const [client, connection] = await connected();
      await expect(client.sendText('  ')).rejects.toThrow('Text cannot be empty');
      await expect(client.configure({ temperature: 2 })).rejects.toThrow('temperature must be a number from 0 to 1');
      await connection.expectSilence();
    });
  });

  describe('sessions', () => {
    it('starts, resumes and ends sessions, announcing each change', async () => {
      const [client, connection] = await connected();
      const sessions = record(client, 'session');
      const started = client.startSession();
      expect(await connection.next()).toEqual({ type: 'start_session' });
      connection.status('connected', { session_id: 'fresh' });
      expect(await started).toBe('fresh');

      const resumed = client.startSession('older');
      expect(await connection.next()).toEqual({ type: 'start_session', session_id: 'older' });
      connection.status('connected', { session_id: 'older' });
      expect(await resumed).toBe('older');

      const refused = rejection(client.startSession('gone'));
      await connection.next();
      connection.send({ type: 'error', code: 'SESSION_ERROR', message: 'Session "gone" does not exist' });
      expect((await refused).code).toBe('SESSION_ERROR');
      expect(client.sessionId).toBe('older');

      const ended = client.endSession();
      expect(await connection.next()).toEqual({ type: 'end_session' });
      connection.status('idle', { message: 'Session ended', session_id: 'older' });
      connection.status('connected', { session_id: 'newest' });
      expect(await ended).toBe('newest');
      expect(sessions.map(([, change]) => change)).toEqual([
        { sessionId: 'fresh', previousSessionId: 'session-1', reason: 'started' },
        { sessionId: 'older', previousSessionId: 'fresh', reason: 'resumed' },
        { sessionId: 'newest', previousSessionId: 'older', reason: 'ended' },
      ]);
    });

    it('follows the gateway when another connection takes the session over', async () => {
      const [client, connection] = await connected();
      const sessions = record(client, 'session');
      connection.status('connected', { session_id: 'moved-on', previous_session_id: 'session-1', reason: 'session_resumed_elsewhere' });
      await new Promise((resolve) => client.once('session', resolve));
      expect(client.sessionId).toBe('moved-on');
      expect(sessions[0][1]).toEqual({ sessionId: 'moved-on', previousSessionId: 'session-1', reason: 'resumed_elsewhere' });
    });

    it('follows the gateway to a new session when its store lost this one, in the middle of a turn', async () => {
      const [client, connection] = await connected();
      const sessions = record(client, 'session');
      const turn = client.sendTurn('hello');
      const { turn_id } = await connection.next();
      connection.send({ type: 'status', status: 'processing', data: {}, turn_id });
      connection.status('connected', { session_id: 'replacement', previous_session_id: 'session-1', reason: 'session_lost' });
      connection.send({ type: 'llm_response', content: 'Hi.', tool_calls: [], is_final: true, history_saved: false, turn_id });
      connection.send({ type: 'status', status: 'idle', data: { session_id: 'replacement' }, turn_id });
      expect(await turn).toMatchObject({ content: 'Hi.', historySaved: false, cancelled: false });
      expect(client.sessionId).toBe('replacement');
      expect(sessions[0][1]).toEqual({ sessionId: 'replacement', previousSessionId: 'session-1', reason: 'lost' });
    });

    it('answers ping with the round trip, and times out without a pong', async () => {
      const [client, connection] = await connected();
      const ping = client.ping();
      expect(await connection.next()).toEqual({ type: 'ping' });
      connection.send({ type: 'pong' });
      const roundTrip = await ping;
      expect(roundTrip).toBeGreaterThanOrEqual(0);
      expect(Number.isInteger(roundTrip)).toBe(true);

      const late = rejection(client.ping(50));
      expect((await late).code).toBe('PING_TIMEOUT');
      const next = client.ping();
      await connection.next();
      await connection.next();
      connection.send({ type: 'pong' }); // the late one's
      const settled = await Promise.race([next.then(() => 'answered'), new Promise((resolve) => setTimeout(() => resolve('waiting'), 100))]);
      expect(settled).toBe('waiting');
      connection.send({ type: 'pong' });
      await next;
    });
  });

  describe('device tools', () => {
    async function withTools(tools: any[], options: Partial<LlmGatewayClientOptions> = {}) {
      const [client, connection] = await connected(options);
      const registering = client.registerTools(tools);
      const frame = await connection.next();
      connection.send({
        type: 'tools_registered',
        count: frame.tools.length,
        tools: frame.tools.map((tool: any) =>
          tool.name.startsWith('bad')
            ? { name: tool.name, status: 'failed', error: 'nope', code: 'TOOL_REGISTRATION_FAILED' }
            : { name: tool.name, status: 'registered' },
        ),
      });
      const registrations = await registering;
      return { client, connection, frame, registrations };
    }

    async function callBack(connection: ScriptedConnection, tool: string, args: object = {}, callId = 'call-1') {
      connection.send({ type: 'tool_callback', call_id: callId, tool_name: tool, arguments: args });
      return connection.next();
    }

    it('registers tools and keeps only those the gateway accepted', async () => {
      const { client, frame, registrations } = await withTools([BATTERY, { ...BATTERY, name: 'bad_tool' }]);
      expect(frame).toEqual({
        type: 'register_tools',
        tools: [
          { name: 'get_battery', description: 'Battery level', parameters: { type: 'object', properties: {} } },
          { name: 'bad_tool', description: 'Battery level', parameters: { type: 'object', properties: {} } },
        ],
      });
      expect(registrations[1]).toEqual({ name: 'bad_tool', status: 'failed', error: 'nope', code: 'TOOL_REGISTRATION_FAILED' });
      expect(client.registeredTools).toEqual(['get_battery']);
    });

    it('fails the registration when the gateway has client tools turned off', async () => {
      const [client, connection] = await connected();
      const registering = rejection(client.registerTools([BATTERY]));
      await connection.next();
      connection.send({ type: 'error', code: 'TOOL_REGISTRATION_FAILED', message: 'Client tools are disabled on this server' });
      expect((await registering).code).toBe('TOOL_REGISTRATION_FAILED');
      expect(client.registeredTools).toEqual([]);
    });

    it('checks tools before sending them', async () => {
      const [client, connection] = await connected();
      await expect(client.registerTools([])).rejects.toThrow('tools must be a non-empty array');
      await expect(client.registerTools([{ ...BATTERY, handler: undefined as any }])).rejects.toThrow('tools[0] ("get_battery").handler must be a function');
      await expect(client.registerTools([{ ...BATTERY, parameters: [] as any }])).rejects.toThrow(/parameters must be a JSON Schema object/);
      await connection.expectSilence();
    });

    it("answers a callback with the handler's value, given the arguments and the call", async () => {
      const calls: any[] = [];
      const tool = { ...BATTERY, handler: (args: object, context: any) => (calls.push([args, context.callId, context.toolName]), { level: 85 }) };
      const { connection } = await withTools([tool]);
      expect(await callBack(connection, 'get_battery', { unit: '%' })).toEqual({
        type: 'tool_result',
        call_id: 'call-1',
        success: true,
        result: { level: 85 },
      });
      expect(calls).toEqual([[{ unit: '%' }, 'call-1', 'get_battery']]);
    });

    it('reports a handler that throws, returns nothing, or returns what is not JSON', async () => {
      const cyclic: any = {};
      cyclic.self = cyclic;
      const { connection } = await withTools([
        { ...BATTERY, name: 'thrower', handler: async () => Promise.reject(new Error('The lid is open')) },
        { ...BATTERY, name: 'silent', handler: () => undefined },
        { ...BATTERY, name: 'cyclic', handler: () => cyclic },
      ]);
      expect(await callBack(connection, 'thrower')).toEqual({ type: 'tool_result', call_id: 'call-1', success: false, error: 'The lid is open' });
      expect(await callBack(connection, 'silent', {}, 'call-2')).toEqual({ type: 'tool_result', call_id: 'call-2', success: true, result: null });
      const notJson = await callBack(connection, 'cyclic', {}, 'call-3');
      expect(notJson).toMatchObject({ success: false, error: expect.stringMatching(/^Tool "cyclic" returned a value that is not JSON/) });
      expect(await callBack(connection, 'nobody_has_it', {}, 'call-4')).toEqual({
        type: 'tool_result',
        call_id: 'call-4',
        success: false,
        error: 'No handler for tool "nobody_has_it" on this client',
      });
    });

    it('answers a handler that runs too long as failed, and aborts it', async () => {
      let signal: AbortSignal | undefined;
      const slow = { ...BATTERY, handler: (_args: object, context: any) => ((signal = context.signal), new Promise(() => undefined)) };
      const { connection } = await withTools([slow], { toolTimeoutMs: 60 });
      expect(await callBack(connection, 'get_battery')).toEqual({
        type: 'tool_result',
        call_id: 'call-1',
        success: false,
        error: 'Tool "get_battery" did not answer within 60 ms',
      });
      expect(signal?.aborted).toBe(true);
    });

    it('abandons a call whose turn is over without answering it', async () => {
      let signal: AbortSignal | undefined;
      const slow = { ...BATTERY, handler: (_args: object, context: any) => ((signal = context.signal), new Promise(() => undefined)) };
      const { client, connection } = await withTools([slow]);
      const answer = rejection(client.sendText('battery?'));
      const { turn_id } = await connection.next();
      connection.send({ type: 'status', status: 'processing', data: {}, turn_id });
      connection.send({ type: 'status', status: 'waiting_for_tools', data: { pending_tools: 1 }, turn_id });
      connection.send({ type: 'tool_callback', call_id: 'call-1', tool_name: 'get_battery', arguments: {}, turn_id });
      await new Promise((resolve) => client.once('tool_callback', resolve));
      connection.send({ type: 'error', code: 'TOOL_RESULT_TIMEOUT', message: 'Tool execution timeout', turn_id });
      connection.send({ type: 'status', status: 'idle', data: {}, turn_id });
      expect((await answer).code).toBe('TOOL_RESULT_TIMEOUT');
      expect(signal?.aborted).toBe(true);
      await connection.expectSilence();
    });

    it("answers a call that names no turn (an agent's) even when a turn ends meanwhile", async () => {
      let finish!: (value: unknown) => void;
      const reboot = { ...BATTERY, name: 'reboot', visibility: 'agents' as const, handler: () => new Promise((resolve) => (finish = resolve)) };
      const { client, connection } = await withTools([reboot]);
      connection.send({ type: 'tool_callback', call_id: 'agent-1', tool_name: 'reboot', arguments: {} });
      await new Promise((resolve) => client.once('tool_callback', resolve));
      const turn = client.sendText('hello');
      await connection.next();
      answerTurn(connection, 'Hi.');
      expect(await turn).toBe('Hi.');
      finish({ rebooting: true });
      expect(await connection.next()).toEqual({ type: 'tool_result', call_id: 'agent-1', success: true, result: { rebooting: true } });
    });

    it("sends each tool's visibility when it has one, and refuses one the gateway does not know", async () => {
      const { client, frame } = await withTools([
        { ...BATTERY, name: 'reboot', visibility: 'agents' },
        { ...BATTERY, name: 'get_mood', visibility: 'model' },
        BATTERY,
      ]);
      expect(frame.tools.map((tool: any) => [tool.name, tool.visibility])).toEqual([
        ['reboot', 'agents'],
        ['get_mood', 'model'],
        ['get_battery', undefined],
      ]);
      expect('visibility' in frame.tools[2]).toBe(false);
      await expect(client.registerTools([{ ...BATTERY, visibility: 'everyone' as any }])).rejects.toThrow(
        'tools[0] ("get_battery").visibility must be one of "agents", "model", "both"',
      );
    });
  });

  describe('reconnection', () => {
    it('reconnects with backoff, resumes the session, registers the tools and settings again, then sends what waited', async () => {
      const { client, connection } = await (async () => {
        const [client, connection] = await connected();
        const registering = client.registerTools([BATTERY]);
        await connection.next();
        connection.send({ type: 'tools_registered', count: 1, tools: [{ name: 'get_battery', status: 'registered' }] });
        await registering;
        await client.configure({ clean_response: false, temperature: 0.3 });
        await connection.next();
        return { client, connection };
      })();
      const seen = record(client, 'disconnected', 'reconnecting', 'state', 'session');
      const inFlight = rejection(client.sendText('lost'));
      await connection.next();
      connection.drop();
      expect((await inFlight).code).toBe('CONNECTION_LOST');
      const waited = client.sendText('after');

      const again = await gateway.accept();
      expect(await again.next()).toEqual({ type: 'start_session', session_id: 'session-1' });
      expect(await again.next()).toEqual({
        type: 'register_tools',
        tools: [{ name: 'get_battery', description: 'Battery level', parameters: { type: 'object', properties: {} } }],
      });
      expect(await again.next()).toEqual({ type: 'configure', clean_response: false, temperature: 0.3 });
      await again.expectSilence();
      again.send({ type: 'tools_registered', count: 1, tools: [{ name: 'get_battery', status: 'registered' }] });
      again.status('connected', { session_id: 'session-1' });
      expect(await again.next()).toEqual({ type: 'text_input', text: 'after', turn_id: expect.stringMatching(/^turn-/) });
      answerTurn(again, 'back');
      expect(await waited).toBe('back');
      expect(client.sessionId).toBe('session-1');
      expect(seen.map(([type, payload]) => (typeof payload === 'string' ? `${type}:${payload}` : type))).toEqual([
        'disconnected',
        'state:reconnecting',
        'reconnecting',
        'state:open',
        'session',
      ]);
      expect(seen[0][1]).toEqual({ code: 1006, reason: '', willReconnect: true });
      expect(seen[2][1]).toEqual({ attempt: 1, delayMs: expect.any(Number) });
      expect(seen[4][1]).toEqual({ sessionId: 'session-1', previousSessionId: 'session-1', reason: 'resumed' });
      expect(await callBackAgain(again)).toEqual({ type: 'tool_result', call_id: 'after-reconnect', success: true, result: { level: 85 } });
    });

    async function callBackAgain(connection: ScriptedConnection) {
      connection.send({ type: 'tool_callback', call_id: 'after-reconnect', tool_name: 'get_battery', arguments: {} });
      return connection.next();
    }

    it('keeps the new session when the old one cannot be resumed', async () => {
      const [client, connection] = await connected();
      connection.drop();
      const again = await gateway.accept();
      await again.next();
      const change = new Promise((resolve) => client.once('session', resolve));
      again.send({ type: 'error', code: 'SESSION_ERROR', message: 'Session "session-1" does not exist, has expired, or belongs to another client' });
      expect(await change).toMatchObject({ sessionId: 'session-2', previousSessionId: 'session-1', reason: 'resume_failed', error: { code: 'SESSION_ERROR' } });
      expect(client.sessionId).toBe('session-2');
    });

    it('keeps trying while the gateway is away, and gives up after maxAttempts', async () => {
      const [client, connection] = await connected({ reconnect: { initialDelayMs: 10, maxDelayMs: 20, maxAttempts: 3 } });
      const attempts: number[] = [];
      client.on('reconnecting', ({ attempt }) => attempts.push(attempt));
      gateway.refuseWith = 503;
      connection.drop();
      await new Promise((resolve) => client.once('state', resolve));
      const waiting = rejection(client.sendText('anyone?'));
      const error = await waiting;
      expect(error.code).toBe('RECONNECT_FAILED');
      expect(attempts).toEqual([1, 2, 3]);
      expect(client.state).toBe('closed');
    });

    it('stays closed after a drop when reconnection is off', async () => {
      const [client, connection] = await connected({ reconnect: false });
      const closed = new Promise((resolve) => client.on('state', (state) => state === 'closed' && resolve(state)));
      connection.drop();
      await closed;
      expect((await rejection(client.sendText('x'))).code).toBe('NOT_CONNECTED');
    });
  });

  describe('pushed speech', () => {
    const PUSH = 'push-8d1c';

    /** A sentence the gateway pushes: its answer, then its idle, each with origin "push". */
    function say(connection: ScriptedConnection, content: string, extra: Record<string, unknown> = {}, turnId = PUSH): void {
      connection.send({ type: 'llm_response', content, tool_calls: [], is_final: true, turn_id: turnId, origin: 'push', ...extra });
      connection.send({ type: 'status', status: 'idle', data: { session_id: 'session-1' }, turn_id: turnId, origin: 'push' });
    }

    it('reports a sentence pushed between turns as a push, with its reminder, and the next turn gets its own answer', async () => {
      const [client, connection] = await connected();
      const seen = record(client, 'push', 'sentence', 'pushSentence');
      const statuses = record(client, 'status');
      say(connection, 'Dinner is ready.', { reminder_id: 'rem-7' });
      await new Promise((resolve) => client.once('status', resolve));
      expect(seen).toEqual([['push', { turnId: PUSH, content: 'Dinner is ready.', reminderId: 'rem-7', sentences: [], toolCalls: [] }]]);
      expect(statuses[0][1]).toMatchObject({ status: 'idle', origin: 'push', turn_id: PUSH });

      const turn = client.sendTurn('thanks');
      const { turn_id } = await connection.next();
      connection.send({ type: 'status', status: 'processing', data: {}, turn_id });
      connection.send({ type: 'llm_response', content: 'You are welcome.', tool_calls: [], is_final: true, turn_id });
      connection.send({ type: 'status', status: 'idle', data: {}, turn_id });
      expect(await turn).toMatchObject({ turnId: turn_id, content: 'You are welcome.', cancelled: false });
      expect(seen).toHaveLength(1);
    });

    it('keeps a push that arrives while a turn waits apart from that turn: its sentences, its device tools and its answer are its own', async () => {
      const { client, connection } = await (async () => {
        const [client, connection] = await connected();
        const registering = client.registerTools([BATTERY]);
        await connection.next();
        connection.send({ type: 'tools_registered', count: 1, tools: [{ name: 'get_battery', status: 'registered' }] });
        await registering;
        return { client, connection };
      })();
      await client.configure({ stream: true });
      await connection.next();
      const seen = record(client, 'push', 'sentence', 'pushSentence');
      const heard: string[] = [];
      const turn = client.sendTurn('What time is it?', { onSentence: (sentence) => heard.push(sentence) });
      const { turn_id } = await connection.next();

      // The gateway was running a pushed turn: every frame of an ordinary turn, under the push's id.
      const pushed = { turn_id: PUSH, origin: 'push' };
      connection.send({ type: 'status', status: 'processing', data: {}, ...pushed });
      connection.send({ type: 'llm_response', content: 'Your battery is low.', tool_calls: [], is_final: false, seq: 0, ...pushed });
      connection.send({ type: 'status', status: 'waiting_for_tools', data: { pending_tools: 1 }, ...pushed });
      connection.send({ type: 'tool_callback', call_id: 'push-call', tool_name: 'get_battery', arguments: {}, ...pushed });
      expect(await connection.next()).toEqual({ type: 'tool_result', call_id: 'push-call', success: true, result: { level: 85 } });
      connection.send({ type: 'tool_call', tool_name: 'get_current_time', arguments: {}, result: '10:00', success: true, duration_ms: 1, ...pushed });
      connection.send({ type: 'llm_response', content: ' It is at 85 percent.', tool_calls: [], is_final: false, seq: 1, ...pushed });
      const toolCalls = [{ call_id: 'c', name: 'get_battery', arguments: {}, location: 'client', success: true }];
      connection.send({ type: 'llm_response', content: 'Your battery is low. It is at 85 percent.', tool_calls: toolCalls, is_final: true, ...pushed });
      connection.send({ type: 'error', code: 'LLM_ERROR', message: 'a pushed turn failing fails no request of the client', ...pushed });
      connection.send({ type: 'status', status: 'idle', data: {}, ...pushed });

      connection.send({ type: 'status', status: 'processing', data: {}, turn_id });
      connection.send({ type: 'llm_response', content: 'It is ten.', tool_calls: [], is_final: false, seq: 0, turn_id });
      connection.send({ type: 'llm_response', content: 'It is ten.', tool_calls: [], is_final: true, turn_id });
      connection.send({ type: 'status', status: 'idle', data: {}, turn_id });

      expect(await turn).toEqual({ turnId: turn_id, content: 'It is ten.', sentences: ['It is ten.'], toolCalls: [], historySaved: true, cancelled: false });
      expect(heard).toEqual(['It is ten.']);
      expect(seen).toEqual([
        ['pushSentence', { turnId: PUSH, content: 'Your battery is low.', seq: 0 }],
        ['pushSentence', { turnId: PUSH, content: ' It is at 85 percent.', seq: 1 }],
        [
          'push',
          {
            turnId: PUSH,
            content: 'Your battery is low. It is at 85 percent.',
            sentences: ['Your battery is low.', ' It is at 85 percent.'],
            toolCalls,
          },
        ],
        ['sentence', { turnId: turn_id, content: 'It is ten.', seq: 0 }],
      ]);
    });

    it("reports a push that interrupted the client's turn after that turn ends cancelled", async () => {
      const [client, connection] = await connected();
      const pushed = new Promise((resolve) => client.once('push', resolve));
      const turn = client.sendTurn('Tell me a story');
      const { turn_id } = await connection.next();
      connection.send({ type: 'status', status: 'processing', data: {}, turn_id });
      connection.send({ type: 'llm_response', content: 'Once upon a time.', tool_calls: [], is_final: false, seq: 0, turn_id });
      connection.send({ type: 'status', status: 'cancelled', data: { turn_id }, turn_id });
      connection.send({ type: 'status', status: 'idle', data: {}, turn_id });
      say(connection, 'The front door is open.');
      expect(await turn).toMatchObject({ cancelled: true, content: 'Once upon a time.' });
      expect(await pushed).toMatchObject({ content: 'The front door is open.' });
    });

    it('reports each pushed answer once, and a turn not yet started is not started by a push', async () => {
      const [client, connection] = await connected();
      const pushes = record(client, 'push');
      const turn = client.sendText('hello');
      const { turn_id } = await connection.next();
      connection.send({ type: 'status', status: 'processing', data: {}, turn_id: PUSH, origin: 'push' });
      connection.send({ type: 'llm_response', content: 'First.', tool_calls: [], is_final: true, turn_id: PUSH, origin: 'push' });
      connection.send({ type: 'llm_response', content: 'Again.', tool_calls: [], is_final: true, turn_id: PUSH, origin: 'push' });
      connection.send({ type: 'status', status: 'idle', data: {}, turn_id: PUSH, origin: 'push' });
      say(connection, 'Second push.', {}, 'push-2');
      connection.send({ type: 'status', status: 'processing', data: {}, turn_id });
      connection.send({ type: 'llm_response', content: 'Hi.', tool_calls: [], is_final: true, turn_id });
      connection.send({ type: 'status', status: 'idle', data: {}, turn_id });
      expect(await turn).toBe('Hi.');
      expect(pushes.map(([, push]) => `${push.turnId}:${push.content}`)).toEqual([`${PUSH}:First.`, 'push-2:Second push.']);
    });

    it('lets no push frame, not even its idle or an error, settle a pending end_session', async () => {
      const [client, connection] = await connected();
      const pushes = record(client, 'push');
      const ended = client.endSession();
      await connection.next();
      say(connection, 'Time to stretch.');
      connection.send({ type: 'error', code: 'TIMEOUT', message: 'a pushed turn timed out', turn_id: 'push-3', origin: 'push' });
      const early = await Promise.race([
        ended.then(
          () => 'settled',
          () => 'failed',
        ),
        new Promise((resolve) => setTimeout(() => resolve('waiting'), 100)),
      ]);
      expect(early).toBe('waiting');
      connection.status('idle', { message: 'Session ended', session_id: 'session-1' });
      connection.status('connected', { session_id: 'session-2' });
      expect(await ended).toBe('session-2');
      expect(pushes).toHaveLength(1);
    });

    it('does not let pushes held for a reconnecting device disturb the resume, the tools or what waited', async () => {
      const { client, connection } = await (async () => {
        const [client, connection] = await connected();
        const registering = client.registerTools([{ ...BATTERY, visibility: 'model' }]);
        await connection.next();
        connection.send({ type: 'tools_registered', count: 1, tools: [{ name: 'get_battery', status: 'registered' }] });
        await registering;
        return { client, connection };
      })();
      const sessions = record(client, 'session');
      const pushes = record(client, 'push');
      connection.drop();
      await new Promise((resolve) => client.once('reconnecting', resolve));
      const waited = client.sendText('after');

      const again = await gateway.accept();
      expect(await again.next()).toEqual({ type: 'start_session', session_id: 'session-1' });
      expect(await again.next()).toEqual({
        type: 'register_tools',
        tools: [{ name: 'get_battery', description: 'Battery level', parameters: { type: 'object', properties: {} }, visibility: 'model' }],
      });
      // Held pushes, delivered as the device came back, before the gateway answers the resume.
      say(again, 'You missed a call.', { reminder_id: 'rem-1' }, 'push-held-1');
      again.send({ type: 'error', code: 'SESSION_ERROR', message: 'a push failing is not the resume failing', turn_id: 'push-held-2', origin: 'push' });
      again.send({ type: 'status', status: 'idle', data: {}, turn_id: 'push-held-2', origin: 'push' });
      again.send({ type: 'tools_registered', count: 1, tools: [{ name: 'get_battery', status: 'registered' }] });
      again.status('connected', { session_id: 'session-1' });
      expect(await again.next()).toEqual({ type: 'text_input', text: 'after', turn_id: expect.stringMatching(/^turn-/) });
      answerTurn(again, 'back');
      expect(await waited).toBe('back');
      expect(sessions.map(([, change]) => change)).toEqual([{ sessionId: 'session-1', previousSessionId: 'session-1', reason: 'resumed' }]);
      expect(client.registeredTools).toEqual(['get_battery']);
      expect(pushes.map(([, push]) => push)).toEqual([
        { turnId: 'push-held-1', content: 'You missed a call.', reminderId: 'rem-1', sentences: [], toolCalls: [] },
      ]);
    });

    it("abandons a pushed turn's device tool call when that push ends, and only then", async () => {
      let signal: AbortSignal | undefined;
      const slow = { ...BATTERY, handler: (_args: object, context: any) => ((signal = context.signal), new Promise(() => undefined)) };
      const [client, connection] = await connected();
      const registering = client.registerTools([slow]);
      await connection.next();
      connection.send({ type: 'tools_registered', count: 1, tools: [{ name: 'get_battery', status: 'registered' }] });
      await registering;
      connection.send({ type: 'tool_callback', call_id: 'push-call', tool_name: 'get_battery', arguments: {}, turn_id: PUSH, origin: 'push' });
      await new Promise((resolve) => client.once('tool_callback', resolve));
      const turn = client.sendText('hello');
      const { turn_id } = await connection.next();
      connection.send({ type: 'status', status: 'processing', data: {}, turn_id });
      connection.send({ type: 'llm_response', content: 'Hi.', tool_calls: [], is_final: true, turn_id });
      connection.send({ type: 'status', status: 'idle', data: {}, turn_id });
      expect(await turn).toBe('Hi.');
      expect(signal?.aborted).toBe(false);
      connection.send({ type: 'status', status: 'idle', data: {}, turn_id: PUSH, origin: 'push' });
      await new Promise((resolve) => client.once('status', resolve));
      expect(signal?.aborted).toBe(true);
      await connection.expectSilence();
    });
  });

  describe('closing', () => {
    it('fails what is pending, aborts handlers, and does not reconnect', async () => {
      const [client, connection] = await connected();
      const pending = rejection(client.sendText('hi'));
      await connection.next();
      const closing = client.close();
      expect(client.state).toBe('closing');
      await closing;
      expect((await pending).code).toBe('CLIENT_CLOSED');
      expect((await connection.closed).code).toBe(1000);
      expect(client.state).toBe('closed');
      await expect(gateway.accept(200)).rejects.toThrow(/No client connected/);
    });

    it('stops a connection that is still being opened', async () => {
      const client = newClient();
      const connecting = rejection(client.connect());
      await client.close();
      expect((await connecting).code).toBe('CLIENT_CLOSED');
      expect(client.state).toBe('closed');
      await expect(gateway.accept(200)).rejects.toThrow(/No client connected/);
    });

    it('can connect again after closing', async () => {
      const [client] = await connected();
      await client.close();
      const [sessionId] = await Promise.all([client.connect(), gateway.accept()]);
      expect(sessionId).toBe('session-2');
    });
  });
});
