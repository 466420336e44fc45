import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { CreateMessageResultSchema, ElicitResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { RunningGateway, startGateway } from '../support/gateway';
import { HttpUpstream, text, UpstreamTool } from '../support/http-upstream';
import { modernEnvelope, modernRequest } from '../support/mcp-http';
import { inspector, removeKeys, TEST_REDIS_URL, uniquePrefix } from '../support/redis';
import { ModernWebSocketTransport } from '../support/modern-websocket-transport';
import { serversFile, until, upstreamIn } from '../support/upstreams';

const TOKEN = 'token-of-the-input-required-tests';
const OTHER_TOKEN = 'another-token-of-the-input-required-tests';
const UPSTREAM_TOKEN = 'upstream-token-of-the-input-required-tests';
const objectSchema = { type: 'object' as const, properties: {} };
const NAME_QUESTION = {
  message: 'Your name?',
  requestedSchema: { type: 'object' as const, properties: { name: { type: 'string' as const } }, required: ['name'] },
};

/** What `ask_then_wait` saw: the names it was given, and how many of its calls were cancelled while they waited. */
const WAITER = { answered: [] as string[], cancelled: 0 };

/** Upstream tools that ask their caller things while they run, as a 2025 server does: by a request of their own. */
const ASKING_TOOLS: UpstreamTool[] = [
  {
    tool: { name: 'ask_then_wait', description: 'Asks the name, then works until it is cancelled', inputSchema: objectSchema },
    run: async (_args, _meta, extra) => {
      const answer = await extra!.sendRequest({ method: 'elicitation/create', params: NAME_QUESTION }, ElicitResultSchema);
      WAITER.answered.push(String(answer.content?.name));
      await new Promise((resolve) => extra!.signal.addEventListener('abort', resolve, { once: true }));
      WAITER.cancelled += 1;
      return text('cancelled');
    },
  },
  {
    tool: { name: 'ask_name', description: "Asks the user's name", inputSchema: objectSchema },
    run: async (_args, _meta, extra) => {
      const answer = await extra!.sendRequest({ method: 'elicitation/create', params: NAME_QUESTION }, ElicitResultSchema);
      return text(answer.action === 'accept' ? `Hello ${answer.content?.name}` : `no answer (${answer.action})`);
    },
  },
  {
    tool: { name: 'ask_in_task', description: "Asks the user's name; may run as a task", inputSchema: objectSchema, execution: { taskSupport: 'optional' } },
    run: async (_args, _meta, extra) => {
      const answer = await extra!.sendRequest({ method: 'elicitation/create', params: NAME_QUESTION }, ElicitResultSchema);
      return text(answer.action === 'accept' ? `Hello ${answer.content?.name}` : `no answer (${answer.action})`);
    },
  },
  {
    tool: { name: 'ask_twice', description: 'Asks the name, then asks the model about it', inputSchema: objectSchema },
    run: async (_args, _meta, extra) => {
      const name = await extra!.sendRequest({ method: 'elicitation/create', params: NAME_QUESTION }, ElicitResultSchema);
      const said = await extra!.sendRequest(
        {
          method: 'sampling/createMessage',
          params: { messages: [{ role: 'user', content: { type: 'text', text: `Greet ${name.content?.name}` } }], maxTokens: 20 },
        },
        CreateMessageResultSchema,
      );
      return text(`${name.content?.name}: ${said.content.type === 'text' ? said.content.text : '?'}`);
    },
  },
];

/**
 * An upstream's question to a 2026-07-28 client: MCP's multi-round-trip requests. The call
 * answers `input_required` with the question and a sealed `requestState`; the client's retry,
 * with its answers, gets the result (or the next question) while the upstream's call waits.
 */
describe('Questions to 2026-07-28 clients: input_required and the retry', () => {
  let upstream: HttpUpstream;
  let gateway: RunningGateway;
  let servers: ReturnType<typeof serversFile>;
  const closing: { close(): Promise<void> }[] = [];

  beforeAll(async () => {
    upstream = await HttpUpstream.start(UPSTREAM_TOKEN, ASKING_TOOLS);
    const connection = { url: upstream.url(), headers: { Authorization: `Bearer ${UPSTREAM_TOKEN}` } };
    servers = serversFile({ asking: connection, hasty: { ...connection, callTimeout: 1 } });
    gateway = await startGateway({ AUTH_TOKENS: `${TOKEN},${OTHER_TOKEN}`, MCP_SERVERS_FILE: servers.path });
    await upstreamIn(gateway, 'asking', 'connected');
    await upstreamIn(gateway, 'hasty', 'connected');
  }, 60_000);

  afterAll(async () => {
    await Promise.all(closing.map((client) => client.close()));
    await gateway?.close();
    await upstream?.kill();
    servers?.remove();
  });

  /** An SDK 2.x client that declares elicitation and sampling and answers them; the SDK retries with its answers by itself. */
  async function answeringClient(transport: ModernTransport | ModernWebSocketTransport): Promise<ModernClient> {
    const client = new ModernClient(
      { name: 'input-required-e2e', version: '1.0.0' },
      { capabilities: { elicitation: {}, sampling: {} }, versionNegotiation: { mode: { pin: '2026-07-28' } } },
    );
    client.setRequestHandler('elicitation/create', (request) => ({ action: 'accept', content: { name: `Ada (asked: ${request.params.message})` } }));
    client.setRequestHandler('sampling/createMessage', () => ({ role: 'assistant', content: { type: 'text', text: 'hi there' }, model: 'test-model' }));
    await client.connect(transport);
    closing.push(client);
    return client;
  }

  const overHttp = () => new ModernTransport(new URL(gateway.http('/mcp')), { requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } } });
  const textOf = (result: { content?: unknown }) => (result.content as { text?: string }[])[0]?.text;

  /** One raw `tools/call` of the 2026 revision by `token`, declaring `capabilities`. */
  const callRaw = (token: string, name: string, extra: Record<string, unknown> = {}, capabilities: Record<string, unknown> = { elicitation: {} }) =>
    modernRequest(gateway, token, 'tools/call', { name, arguments: {}, ...extra }, capabilities);

  it("relays the upstream's elicitation and sampling to an SDK 2.x client, whose answers reach the upstream", async () => {
    const client = await answeringClient(overHttp());
    expect(textOf(await client.callTool({ name: 'asking.ask_name', arguments: {} }))).toBe('Hello Ada (asked: Your name?)');
    expect(textOf(await client.callTool({ name: 'asking.ask_twice', arguments: {} }))).toBe('Ada (asked: Your name?): hi there');
  });

  it('does the same over a plain WebSocket', async () => {
    const client = await answeringClient(new ModernWebSocketTransport(gateway.ws(`/mcp?token=${TOKEN}`)));
    expect(textOf(await client.callTool({ name: 'asking.ask_twice', arguments: {} }))).toBe('Ada (asked: Your name?): hi there');
  });

  it('answers input_required with the question and a sealed requestState; the retry with the answer gets the result', async () => {
    const first = await callRaw(TOKEN, 'asking.ask_name');
    expect(first.result).toMatchObject({
      resultType: 'input_required',
      inputRequests: { 'elicitation-1': { method: 'elicitation/create', params: NAME_QUESTION } },
    });
    const { requestState } = first.result!;
    expect(typeof requestState).toBe('string');

    // No answer yet: the same question again.
    const again = await callRaw(TOKEN, 'asking.ask_name', { requestState, inputResponses: {} });
    expect(again.result).toMatchObject({ resultType: 'input_required', inputRequests: { 'elicitation-1': { method: 'elicitation/create' } } });

    // An answer that is not an elicitation result is refused; the question stays open.
    const wrong = await callRaw(TOKEN, 'asking.ask_name', {
      requestState: again.result!.requestState,
      inputResponses: { 'elicitation-1': { action: 'maybe' } },
    });
    expect(wrong.error).toEqual({
      code: -32602,
      message: 'inputResponses["elicitation-1"] is not an answer to elicitation/create: action must be one of: "accept", "decline", "cancel"',
    });

    const answered = await callRaw(TOKEN, 'asking.ask_name', {
      requestState: again.result!.requestState,
      inputResponses: { 'elicitation-1': { action: 'accept', content: { name: 'Grace' } } },
    });
    expect(answered.result).toMatchObject({ content: [{ type: 'text', text: 'Hello Grace' }] });
    expect(answered.result!.resultType ?? 'complete').toBe('complete');

    // The result is collected: the state names a call that no longer waits.
    const late = await callRaw(TOKEN, 'asking.ask_name', { requestState, inputResponses: {} });
    expect(late.error).toMatchObject({ code: -32602, message: expect.stringContaining('no longer waits') });
  });

  it('refuses a requestState that was tampered with, retried by another principal, or for another tool', async () => {
    const first = await callRaw(TOKEN, 'asking.ask_name');
    const { requestState } = first.result!;
    const tampered = `${requestState.slice(0, -2)}${requestState.endsWith('A') ? 'B' : 'A'}A`;
    expect((await callRaw(TOKEN, 'asking.ask_name', { requestState: tampered, inputResponses: {} })).error).toMatchObject({ code: -32602 });
    expect((await callRaw(OTHER_TOKEN, 'asking.ask_name', { requestState, inputResponses: {} })).error).toMatchObject({ code: -32602 });
    expect((await callRaw(TOKEN, 'asking.ask_twice', { requestState, inputResponses: {} })).error).toMatchObject({
      code: -32602,
      message: expect.stringContaining('belongs to a call of "asking.ask_name"'),
    });
    // The rightful retry still works.
    const answered = await callRaw(TOKEN, 'asking.ask_name', { requestState, inputResponses: { 'elicitation-1': { action: 'decline' } } });
    expect(answered.result).toMatchObject({ content: [{ type: 'text', text: 'no answer (decline)' }] });
  });

  const BOTH = { elicitation: {}, sampling: {} };
  const NAMED = { 'elicitation-1': { action: 'accept', content: { name: 'Lin' } } };
  const SAMPLED = { 'sampling-2': { role: 'assistant', content: { type: 'text', text: 'welcome' }, model: 'm' } };
  /** What the SDK answers a retry whose requestState it cannot verify. */
  const INVALID_STATE = { code: -32602, message: 'Invalid or expired requestState', data: { reason: 'invalid_request_state' } };

  it("refuses an earlier round's requestState once a later round issued its own, as a tampered one; the latest completes the call", async () => {
    const first = await callRaw(TOKEN, 'asking.ask_twice', {}, BOTH);
    expect(first.result).toMatchObject({ resultType: 'input_required', inputRequests: { 'elicitation-1': { method: 'elicitation/create' } } });
    const second = await callRaw(TOKEN, 'asking.ask_twice', { requestState: first.result!.requestState, inputResponses: NAMED }, BOTH);
    expect(second.result).toMatchObject({ resultType: 'input_required', inputRequests: { 'sampling-2': { method: 'sampling/createMessage' } } });

    // The first round's state again, with the answer the second round asks for: spent.
    const stale = await callRaw(TOKEN, 'asking.ask_twice', { requestState: first.result!.requestState, inputResponses: SAMPLED }, BOTH);
    expect(stale.error).toEqual(INVALID_STATE);
    const tampered = `${first.result!.requestState.slice(0, -2)}${first.result!.requestState.endsWith('A') ? 'B' : 'A'}A`;
    expect((await callRaw(TOKEN, 'asking.ask_twice', { requestState: tampered, inputResponses: SAMPLED }, BOTH)).error).toEqual(stale.error);
    // Without answers too: it does not open a round of its own.
    expect((await callRaw(TOKEN, 'asking.ask_twice', { requestState: first.result!.requestState, inputResponses: {} }, BOTH)).error).toEqual(INVALID_STATE);

    const answered = await callRaw(TOKEN, 'asking.ask_twice', { requestState: second.result!.requestState, inputResponses: SAMPLED }, BOTH);
    expect(answered.result).toMatchObject({ content: [{ type: 'text', text: 'Lin: welcome' }] });
  });

  it('ends a call whose question nobody answers at its time limit: the retry gets the timeout, and the state is spent', async () => {
    const first = await callRaw(TOKEN, 'hasty.ask_name');
    expect(first.result).toMatchObject({ resultType: 'input_required' });
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const { requestState } = first.result!;
    const ended = await callRaw(TOKEN, 'hasty.ask_name', {
      requestState,
      inputResponses: { 'elicitation-1': { action: 'accept', content: { name: 'Too late' } } },
    });
    expect(ended.result).toMatchObject({ isError: true, content: [{ type: 'text', text: 'Tool "hasty.ask_name" did not finish within 1 s' }] });
    expect((await callRaw(TOKEN, 'hasty.ask_name', { requestState, inputResponses: {} })).error).toMatchObject({ code: -32602 });
  });

  it('ends the call whose upstream asks what the client did not declare with -32021 and the capability it needs, instead of hanging', async () => {
    const answer = await callRaw(TOKEN, 'asking.ask_name', {}, {});
    expect(answer.error).toMatchObject({
      code: -32021,
      message: 'The client that made this call cannot answer elicitation/create: it did not declare the elicitation capability',
      data: { requiredCapabilities: { elicitation: {} } },
    });
  });

  const TASKS = { 'io.modelcontextprotocol/tasks': {} };

  /** Polls `tasks/get` on `replica` until the task's status is no longer `working`. */
  async function settledTask(replica: RunningGateway, taskId: string): Promise<Record<string, any>> {
    let task: Record<string, any> = {};
    await until(
      async () => (task = (await modernRequest(replica, TOKEN, 'tasks/get', { taskId }, { extensions: TASKS })).result!).status !== 'working',
      10_000,
      `task ${taskId} to move`,
    );
    return task;
  }

  it("asks a task's question through the task: input_required in tasks/get, the answer by tasks/update, then the result", async () => {
    const started = await modernRequest(gateway, TOKEN, 'tools/call', { name: 'asking.ask_in_task', arguments: {} }, { elicitation: {}, extensions: TASKS });
    expect(started.result).toMatchObject({ resultType: 'task', status: 'working' });
    const { taskId } = started.result!;
    const asking = await settledTask(gateway, taskId);
    expect(asking).toMatchObject({ status: 'input_required', inputRequests: { 'elicitation-1': { method: 'elicitation/create', params: NAME_QUESTION } } });
    // An answer to a key that is not open is ignored; an answer that is not one leaves the question open.
    await modernRequest(gateway, TOKEN, 'tasks/update', { taskId, inputResponses: { 'elicitation-9': { action: 'decline' } } }, { extensions: TASKS });
    const updated = await modernRequest(
      gateway,
      TOKEN,
      'tasks/update',
      { taskId, inputResponses: { 'elicitation-1': { action: 'accept', content: { name: 'Ada' } } } },
      { extensions: TASKS },
    );
    expect(updated.result).toMatchObject({ resultType: 'complete' });
    let task: Record<string, any> = {};
    await until(
      async () => (task = (await modernRequest(gateway, TOKEN, 'tasks/get', { taskId }, { extensions: TASKS })).result!).status === 'completed',
      10_000,
      'the task to complete',
    );
    expect(task.result).toMatchObject({ content: [{ type: 'text', text: 'Hello Ada' }] });
    expect(task.inputRequests).toBeUndefined();
  });

  it("refuses a task's question when the client that started it did not declare the capability", async () => {
    const started = await modernRequest(gateway, TOKEN, 'tools/call', { name: 'asking.ask_in_task', arguments: {} }, { extensions: TASKS });
    const task = await settledTask(gateway, started.result!.taskId);
    expect(task).toMatchObject({ status: 'completed', result: { isError: true } });
    expect(JSON.stringify(task.result)).toContain('did not declare the elicitation capability');
  });

  describe('across instances, with Redis', () => {
    const prefix = uniquePrefix();
    const replicas: RunningGateway[] = [];

    beforeAll(async () => {
      const shared = { AUTH_TOKENS: `${TOKEN},${OTHER_TOKEN}`, MCP_SERVERS_FILE: servers.path, REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: prefix };
      replicas.push(await startGateway(shared), await startGateway(shared));
      await Promise.all(replicas.map((replica) => upstreamIn(replica, 'asking', 'connected')));
    }, 60_000);

    afterAll(async () => {
      await Promise.all(replicas.map((replica) => replica.close()));
      const redis = await inspector();
      await removeKeys(redis, prefix);
      redis.disconnect();
    });

    const callOn = (replica: RunningGateway, name: string, extra: Record<string, unknown> = {}) =>
      modernRequest(replica, TOKEN, 'tools/call', { name, arguments: {}, ...extra }, { elicitation: {}, sampling: {} });

    it('serves a retry that reaches another instance than the one its call waits in, round after round', async () => {
      const [a, b] = replicas;
      const first = await callOn(a, 'asking.ask_twice');
      expect(first.result).toMatchObject({ resultType: 'input_required', inputRequests: { 'elicitation-1': { method: 'elicitation/create' } } });
      const second = await callOn(b, 'asking.ask_twice', {
        requestState: first.result!.requestState,
        inputResponses: { 'elicitation-1': { action: 'accept', content: { name: 'Lin' } } },
      });
      expect(second.result).toMatchObject({ resultType: 'input_required', inputRequests: { 'sampling-2': { method: 'sampling/createMessage' } } });
      // Each round's state is its own, however fast the rounds follow each other.
      expect(second.result!.requestState).not.toBe(first.result!.requestState);
      const answered = await callOn(b, 'asking.ask_twice', {
        requestState: second.result!.requestState,
        inputResponses: { 'sampling-2': { role: 'assistant', content: { type: 'text', text: 'welcome' }, model: 'm' } },
      });
      expect(answered.result).toMatchObject({ content: [{ type: 'text', text: 'Lin: welcome' }] });
      // Another token's retry is refused on the instance that received it, before anything is relayed.
      const other = await modernRequest(b, OTHER_TOKEN, 'tools/call', { name: 'asking.ask_name', arguments: {}, requestState: first.result!.requestState }, {});
      expect(other.error).toMatchObject({ code: -32602 });
    });

    it("refuses an earlier round's requestState relayed to the instance its call waits in, once a later round issued its own", async () => {
      const [a, b] = replicas;
      const first = await callOn(a, 'asking.ask_twice');
      const second = await callOn(b, 'asking.ask_twice', { requestState: first.result!.requestState, inputResponses: NAMED });
      expect(second.result).toMatchObject({ resultType: 'input_required', inputRequests: { 'sampling-2': { method: 'sampling/createMessage' } } });
      expect((await callOn(b, 'asking.ask_twice', { requestState: first.result!.requestState, inputResponses: SAMPLED })).error).toEqual(INVALID_STATE);
      expect((await callOn(a, 'asking.ask_twice', { requestState: first.result!.requestState, inputResponses: SAMPLED })).error).toEqual(INVALID_STATE);
      const answered = await callOn(b, 'asking.ask_twice', { requestState: second.result!.requestState, inputResponses: SAMPLED });
      expect(answered.result).toMatchObject({ content: [{ type: 'text', text: 'Lin: welcome' }] });
    });

    it('ends a call with -32021 in a round served for another instance, when the retry did not declare what is asked next', async () => {
      const [a, b] = replicas;
      const first = await callOn(a, 'asking.ask_twice');
      const second = await modernRequest(
        b,
        TOKEN,
        'tools/call',
        {
          name: 'asking.ask_twice',
          arguments: {},
          requestState: first.result!.requestState,
          inputResponses: { 'elicitation-1': { action: 'accept', content: { name: 'Lin' } } },
        },
        { elicitation: {} },
      );
      expect(second.error).toMatchObject({ code: -32021, data: { requiredCapabilities: { sampling: {} } } });
    });

    it("shows a task's question on another instance, and takes its answer there", async () => {
      const [a, b] = replicas;
      const started = await modernRequest(a, TOKEN, 'tools/call', { name: 'asking.ask_in_task', arguments: {} }, { elicitation: {}, extensions: TASKS });
      const { taskId } = started.result!;
      expect(await settledTask(b, taskId)).toMatchObject({ status: 'input_required', inputRequests: { 'elicitation-1': { method: 'elicitation/create' } } });
      expect((await modernRequest(b, OTHER_TOKEN, 'tasks/get', { taskId }, { extensions: TASKS })).error).toMatchObject({ code: -32602 });
      await modernRequest(
        b,
        TOKEN,
        'tasks/update',
        { taskId, inputResponses: { 'elicitation-1': { action: 'accept', content: { name: 'Kim' } } } },
        { extensions: TASKS },
      );
      let task: Record<string, any> = {};
      await until(
        async () => (task = (await modernRequest(b, TOKEN, 'tasks/get', { taskId }, { extensions: TASKS })).result!).status === 'completed',
        10_000,
        'the task to complete',
      );
      expect(task.result).toMatchObject({ content: [{ type: 'text', text: 'Hello Kim' }] });
    });

    it('ends the call in the instance it waits in when the client of a round served for it from another instance goes away', async () => {
      const [a, b] = replicas;
      const first = await callOn(a, 'asking.ask_then_wait');
      expect(first.result).toMatchObject({ resultType: 'input_required', inputRequests: { 'elicitation-1': { method: 'elicitation/create' } } });
      const leaving = new AbortController();
      const retry = fetch(b.http('/mcp'), {
        method: 'POST',
        signal: leaving.signal,
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          authorization: `Bearer ${TOKEN}`,
          'mcp-protocol-version': '2026-07-28',
          'mcp-method': 'tools/call',
          'mcp-name': 'asking.ask_then_wait',
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/call',
          params: {
            name: 'asking.ask_then_wait',
            arguments: {},
            requestState: first.result!.requestState,
            inputResponses: NAMED,
            _meta: modernEnvelope({ elicitation: {} }),
          },
        }),
      }).catch(() => undefined);
      await until(() => WAITER.answered.includes('Lin'), 10_000, 'the answer relayed to the upstream');
      const cancelledBefore = WAITER.cancelled;
      leaving.abort();
      await retry;
      // The call's own limit (10 s) would end it too, later: the client's going away ends it now.
      await until(() => WAITER.cancelled > cancelledBefore, 5_000, "the upstream's call cancelled");
    });

    it('refuses a retry whose instance is gone, with the reason', async () => {
      // Its call is work in flight at shutdown: a short drain ends it.
      const lone = await startGateway({
        AUTH_TOKENS: TOKEN,
        MCP_SERVERS_FILE: servers.path,
        REDIS_URL: TEST_REDIS_URL,
        REDIS_KEY_PREFIX: prefix,
        SHUTDOWN_DRAIN_TIMEOUT: 1,
      });
      await upstreamIn(lone, 'asking', 'connected');
      const first = await callOn(lone, 'asking.ask_name');
      await lone.close();
      const retry = await callOn(replicas[0], 'asking.ask_name', { requestState: first.result!.requestState, inputResponses: {} });
      expect(retry.error).toMatchObject({ code: -32602, message: expect.stringContaining('the instance it ran in is gone') });
    }, 30_000);
  });
});
