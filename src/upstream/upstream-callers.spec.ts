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

  it('refuses a request when the caller has no way to be asked', async () => {
    const callers = new UpstreamCallers();
    await callers.during({}, signal, async () => {
      await expect(callers.request('up', 'elicitation/create', {}, signal)).rejects.toThrow('is not relayed: its caller cannot be asked');
    });
  });
});
