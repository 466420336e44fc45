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
    expect(() => callers.request('MCP server "x"', 'sampling/createMessage', {}, signal)).toThrow(
      'sampling/createMessage from MCP server "x" is not relayed: the gateway cannot tell which call it belongs to',
    );
    releaseFirst();
    releaseSecond();
    await Promise.all([first, second]);
    expect(callers.current()).toBeUndefined();
  });

  it('refuses a request when the caller has no way to be asked', async () => {
    const callers = new UpstreamCallers();
    await callers.during({}, signal, async () => {
      expect(() => callers.request('up', 'elicitation/create', {}, signal)).toThrow('is not relayed: its caller cannot be asked');
    });
  });
});
