import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { ToolCaller } from '../core/tools/tool-definition';
import { UpstreamCallers } from './upstream-callers';

const signal = new AbortController().signal;

function caller(name: string): ToolCaller {
  return { request: async (method) => ({ answeredBy: name, method }) };
}

describe('UpstreamCallers', () => {
  it('knows the caller exactly within the asynchronous context of its call, even with others in flight', async () => {
    const callers = new UpstreamCallers();
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const other = callers.during(caller('other'), signal, () => held);
    const seen = await callers.during(caller('mine'), signal, async () => {
      await Promise.resolve();
      return callers.request('upstream', 'elicitation/create', {}, signal);
    });
    expect(seen).toEqual({ answeredBy: 'mine', method: 'elicitation/create' });
    release();
    await other;
  });

  it('gives a message from outside any call to the only caller in flight, and to nobody when there are several', async () => {
    const callers = new UpstreamCallers();
    let releaseFirst!: () => void;
    const first = callers.during(caller('first'), signal, () => new Promise<void>((resolve) => (releaseFirst = resolve)));
    // Outside any call's context, as a stdio upstream's messages are.
    await expect(callers.request('upstream', 'sampling/createMessage', {}, signal)).resolves.toEqual({ answeredBy: 'first', method: 'sampling/createMessage' });
    let releaseSecond!: () => void;
    const second = callers.during(caller('second'), signal, () => new Promise<void>((resolve) => (releaseSecond = resolve)));
    await expect(callers.request('MCP server "x"', 'sampling/createMessage', {}, signal)).rejects.toThrow(
      'sampling/createMessage from MCP server "x" is not relayed: the gateway cannot tell which call it belongs to',
    );
    releaseFirst();
    releaseSecond();
    await Promise.all([first, second]);
    expect(callers.current()).toBeUndefined();
  });

  it("asks for a 2026 answer's input the caller of the request it answered, and nobody else when that request has none", async () => {
    const callers = new UpstreamCallers();
    const mine = new AbortController().signal;
    let release!: () => void;
    const other = callers.during(caller('other'), signal, () => new Promise<void>((resolve) => (release = resolve)));
    const seen = await callers.during(
      caller('mine'),
      mine,
      () =>
        // Read outside the call's context, as a stdio pipe's messages are.
        new Promise((resolve) => setImmediate(() => resolve(callers.within(mine, () => callers.request('up', 'elicitation/create', {}, mine))))),
    );
    expect(seen).toEqual({ answeredBy: 'mine', method: 'elicitation/create' });
    // A prompt's answer, with only one tool call in flight: not that call's caller's to answer.
    await expect(callers.within(new AbortController().signal, () => callers.request('up', 'elicitation/create', {}, signal))).rejects.toThrow(
      'the gateway cannot tell which call it belongs to',
    );
    release();
    await other;
  });

  it('withdraws a question still waiting when its call is stopped, only once the call has been rejected, and tells the upstream why', async () => {
    const callers = new UpstreamCallers();
    const stopping = new AbortController();
    const events: string[] = [];
    const waiting: ToolCaller = {
      request: (_method, _params, questionSignal) =>
        new Promise((_resolve, reject) =>
          questionSignal.addEventListener('abort', () => {
            events.push('question withdrawn from the caller');
            reject(new McpError(ErrorCode.RequestTimeout, 'AbortError: This operation was aborted'));
          }),
        ),
    };
    let question!: Promise<unknown>;
    const call = callers.during(waiting, stopping.signal, () => {
      question = callers.request('up', 'sampling/createMessage', {}, signal);
      // As the SDK does: on abort, it sends the upstream the call's cancellation, then rejects.
      return new Promise((_resolve, reject) =>
        stopping.signal.addEventListener('abort', () => {
          events.push("call's cancellation sent");
          reject(new Error('cancelled'));
        }),
      );
    });
    stopping.abort();
    await expect(call).rejects.toThrow('cancelled');
    await expect(question).rejects.toMatchObject({
      code: ErrorCode.InvalidRequest,
      message: expect.stringContaining('sampling/createMessage was withdrawn: the tool call it came with has ended'),
    });
    expect(events).toEqual(["call's cancellation sent", 'question withdrawn from the caller']);
  });

  it('refuses a request when the caller has no way to be asked', async () => {
    const callers = new UpstreamCallers();
    await callers.during({}, signal, async () => {
      await expect(callers.request('up', 'elicitation/create', {}, signal)).rejects.toThrow('is not relayed: its caller cannot be asked');
    });
  });

  it("hands the caller the key a 2026 upstream asked the question under, and none for a 2025 upstream's request", async () => {
    const callers = new UpstreamCallers();
    const keyed: ToolCaller = { request: async (_method, _params, _signal, key) => ({ key: key ?? null }) };
    await callers.during(keyed, signal, async () => {
      await expect(callers.request('up', 'elicitation/create', {}, signal, 'user_name')).resolves.toEqual({ key: 'user_name' });
      await expect(callers.request('up', 'elicitation/create', {}, signal)).resolves.toEqual({ key: null });
    });
  });

  it("answers an upstream's roots/list with no roots when there is nobody to ask, or the caller is no MCP client, and relays it otherwise", async () => {
    const callers = new UpstreamCallers();
    await expect(callers.roots('up', undefined, signal)).resolves.toEqual({ roots: [] });
    // With one call in flight, a roots request from outside its context (a stdio upstream asking when it pleases) is not that call's.
    let release!: () => void;
    const asked: string[] = [];
    const lone = callers.during({ request: async (method) => (asked.push(method), {}) }, signal, () => new Promise<void>((resolve) => (release = resolve)));
    await expect(callers.roots('up', undefined, signal)).resolves.toEqual({ roots: [] });
    release();
    await lone;
    expect(asked).toEqual([]);
    const turn: ToolCaller = {
      request: async (method) => {
        throw new Error(`A voice turn cannot answer "${method}"`);
      },
    };
    await callers.during(turn, signal, async () => expect(await callers.roots('up', undefined, signal)).toEqual({ roots: [] }));
    await callers.during(caller('client'), signal, async () =>
      expect(await callers.roots('up', undefined, signal, 'client_roots')).toEqual({ answeredBy: 'client', method: 'roots/list' }),
    );
    const refusing: ToolCaller = {
      request: async () => {
        throw new McpError(ErrorCode.InvalidRequest, 'The client that made this call cannot answer roots/list');
      },
    };
    await callers.during(refusing, signal, async () =>
      expect(callers.roots('up', undefined, signal)).rejects.toMatchObject({
        code: ErrorCode.InvalidRequest,
        message: expect.stringContaining('cannot answer roots/list'),
      }),
    );
  });
});
