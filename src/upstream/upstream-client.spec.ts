import { JSONRPCMessage, LATEST_PROTOCOL_VERSION, Transport } from '@modelcontextprotocol/client';
import type { ToolCaller } from '../core/tools/tool-definition';
import { UpstreamCallers } from './upstream-callers';
import { UpstreamClient } from './upstream-client';

type Answer = (request: { id: number; method: string; params?: Record<string, any> }) => JSONRPCMessage[];

/**
 * An upstream that hands the client all it writes in answer to a request at once, each message
 * through `onmessage` one after the other in the same tick: what a stdio upstream's pipe does
 * when they come in one chunk, and what any transport may do with messages it has buffered.
 */
class BurstTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  constructor(private readonly answer: Answer) {}

  async start(): Promise<void> {}

  async send(message: JSONRPCMessage): Promise<void> {
    if (!('method' in message) || !('id' in message)) return;
    const request = message as { id: number; method: string; params?: Record<string, any> };
    const replies =
      request.method === 'initialize'
        ? [
            {
              jsonrpc: '2.0' as const,
              id: request.id,
              result: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: { tools: {} }, serverInfo: { name: 'burst', version: '1' } },
            },
          ]
        : this.answer(request);
    setImmediate(() => replies.forEach((reply) => this.onmessage?.(reply)));
  }

  async close(): Promise<void> {
    this.onclose?.();
  }
}

const progressOf = (request: { params?: Record<string, any> }, progress: number): JSONRPCMessage => ({
  jsonrpc: '2.0',
  method: 'notifications/progress',
  params: { progressToken: request.params?._meta?.progressToken, progress, total: 100 },
});

const logOf = (data: string): JSONRPCMessage => ({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data } });

/** Three progress notifications, then the call's answer, all in one burst. */
const progressThenResult: Answer = (request) => [
  progressOf(request, 0),
  progressOf(request, 50),
  progressOf(request, 100),
  { jsonrpc: '2.0', id: request.id, result: { content: [{ type: 'text', text: 'done' }] } },
];

async function connected(answer: Answer, callers = new UpstreamCallers()): Promise<{ client: UpstreamClient; callers: UpstreamCallers; errors: Error[] }> {
  const client = new UpstreamClient({ name: 'gateway', version: '1' }, callers, false);
  const errors: Error[] = [];
  client.onerror = (error) => errors.push(error);
  await client.connect(new BurstTransport(answer));
  return { client, callers, errors };
}

/** A caller that takes a while to deliver each notification, as a client over a network does, and records when each is delivered. */
function slowCaller(events: string[]): ToolCaller {
  const later = () => new Promise((resolve) => setTimeout(resolve, 5));
  return {
    progress: async ({ progress }) => {
      await later();
      events.push(`progress ${progress}`);
    },
    log: async ({ data }) => {
      await later();
      events.push(`log ${String(data)}`);
    },
  };
}

describe('UpstreamClient: what an upstream sends before its answer reaches the caller before the answer', () => {
  it('hands every progress notification that came before the answer, in the same burst, to onprogress before the call resolves', async () => {
    const { client, errors } = await connected(progressThenResult);
    const events: string[] = [];
    const result = await client.callTool({ name: 'work', arguments: {} }, { onprogress: ({ progress }) => void events.push(`progress ${progress}`) });
    events.push('result');
    expect(result.content).toEqual([{ type: 'text', text: 'done' }]);
    expect(events).toEqual(['progress 0', 'progress 50', 'progress 100', 'result']);
    expect(errors).toEqual([]);
    await client.close();
  });

  it('answers a caller only once its progress and log messages have been delivered, when they come with the answer', async () => {
    const { client, callers, errors } = await connected((request) => [
      progressOf(request, 0),
      logOf('halfway'),
      progressOf(request, 100),
      { jsonrpc: '2.0', id: request.id, result: { content: [] } },
    ]);
    client.setNotificationHandler('notifications/message', ({ params }) => {
      const caller = callers.current();
      if (caller?.log) callers.relay(caller, () => caller.log?.(params));
    });
    const events: string[] = [];
    const caller = slowCaller(events);
    const signal = new AbortController().signal;
    const onprogress = (update: { progress: number }) => callers.relay(caller, () => caller.progress?.(update));
    await callers.during(caller, signal, () => client.callTool({ name: 'work', arguments: {} }, { signal, onprogress }));
    events.push('result');
    expect(events).toEqual(['progress 0', 'log halfway', 'progress 100', 'result']);
    expect(errors).toEqual([]);
    await client.close();
  });

  it('delivers the progress that came before an error answer before the error', async () => {
    const { client, callers } = await connected((request) => [
      progressOf(request, 10),
      { jsonrpc: '2.0', id: request.id, error: { code: -32602, message: 'no such tool' } },
    ]);
    const events: string[] = [];
    const caller = slowCaller(events);
    const signal = new AbortController().signal;
    const onprogress = (update: { progress: number }) => callers.relay(caller, () => caller.progress?.(update));
    await expect(callers.during(caller, signal, () => client.callTool({ name: 'work', arguments: {} }, { signal, onprogress }))).rejects.toThrow(
      'no such tool',
    );
    events.push('error');
    expect(events).toEqual(['progress 10', 'error']);
    await client.close();
  });

  it('hands over a flood of 10,000 progress notifications that came in one burst with the answer, all of them first and in order', async () => {
    const FLOOD = 10_000;
    const { client, errors } = await connected((request) => [
      ...Array.from({ length: FLOOD }, (_, index) => progressOf(request, index)),
      { jsonrpc: '2.0', id: request.id, result: { content: [] } },
    ]);
    const seen: number[] = [];
    await client.callTool({ name: 'work', arguments: {} }, { onprogress: ({ progress }) => void seen.push(progress) });
    expect(seen).toEqual(Array.from({ length: FLOOD }, (_, index) => index));
    expect(errors).toEqual([]);
    await client.close();
  });

  it('answers a call whose burst carries progress under a token nobody gave and a stray answer, and says so', async () => {
    const { client, errors } = await connected((request) => [
      { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'nobody', progress: 1 } },
      { jsonrpc: '2.0', id: 987_654, result: {} },
      progressOf(request, 100),
      { jsonrpc: '2.0', id: request.id, result: { content: [{ type: 'text', text: 'still done' }] } },
    ]);
    const seen: number[] = [];
    const result = await client.callTool({ name: 'work', arguments: {} }, { onprogress: ({ progress }) => void seen.push(progress) });
    expect(result.content).toEqual([{ type: 'text', text: 'still done' }]);
    expect(seen).toEqual([100]);
    expect(errors.map((error) => error.message)).toEqual([
      expect.stringContaining('progress notification for an unknown token'),
      expect.stringContaining('response for an unknown message ID'),
    ]);
    await client.close();
  });

  it('keeps the answers of a burst of calls with their own progress, each after its own', async () => {
    const { client, errors } = await connected(progressThenResult);
    const events: string[][] = [[], [], [], [], []];
    await Promise.all(
      events.map(async (seen, index) => {
        await client.callTool({ name: 'work', arguments: { index } }, { onprogress: ({ progress }) => void seen.push(`progress ${progress}`) });
        seen.push('result');
      }),
    );
    for (const seen of events) expect(seen).toEqual(['progress 0', 'progress 50', 'progress 100', 'result']);
    expect(errors).toEqual([]);
    await client.close();
  });
});
