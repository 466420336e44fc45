import { DeviceMcpClient, DeviceMcpProblem, MAX_TOOL_PAGES } from './device-mcp-client';

type Message = Record<string, any>;

/** A client whose device answers each request with `answer` (or not at all), on the next tick. */
function clientWith(answer: (request: Message) => Message | undefined) {
  const sent: Message[] = [];
  const problems: DeviceMcpProblem[] = [];
  const client: DeviceMcpClient = new DeviceMcpClient(
    'aa:bb:cc:dd:ee:ff',
    (payload) => {
      sent.push(payload);
      const reply = payload.method && payload.id !== undefined ? answer(payload) : undefined;
      if (reply) setImmediate(() => client.receive({ jsonrpc: '2.0', id: payload.id, ...reply }));
      return true;
    },
    (problem) => problems.push(problem),
  );
  return { client, sent, problems };
}

const tool = (name: string) => ({ name, description: `${name} does it`, inputSchema: { type: 'object', properties: {} } });

describe('DeviceMcpClient', () => {
  it('initializes, then follows nextCursor until it is empty', async () => {
    const pages: Record<string, Message> = {
      '': { tools: [tool('self.get_device_status')], nextCursor: 'p2' },
      p2: { tools: [tool('self.light.set_rgb'), { description: 'no name' }], nextCursor: '' },
    };
    const { client, sent, problems } = clientWith((request) =>
      request.method === 'initialize' ? { result: { protocolVersion: '2024-11-05', serverInfo: { name: 'board' } } } : { result: pages[request.params.cursor] },
    );
    const tools = await client.discover(new AbortController().signal);
    expect(tools.map((each) => each.name)).toEqual(['self.get_device_status', 'self.light.set_rgb']);
    expect(sent.map((message) => message.method)).toEqual(['initialize', 'notifications/initialized', 'tools/list', 'tools/list']);
    expect(sent[3].params).toEqual({ cursor: 'p2' });
    expect(problems).toEqual(['device_mcp_bad_tool']);
  });

  it(`stops after ${MAX_TOOL_PAGES} pages of a cursor that never ends, keeping what was listed`, async () => {
    let page = 0;
    const { client, problems } = clientWith((request) =>
      request.method === 'initialize' ? { result: {} } : { result: { tools: [tool(`self.tool_${page}`)], nextCursor: `page-${++page}` } },
    );
    const tools = await client.discover(new AbortController().signal);
    expect(tools).toHaveLength(MAX_TOOL_PAGES);
    expect(problems).toEqual(['device_mcp_endless_cursor']);
  });

  it("returns a call's text, and a ToolError with it when the device says isError", async () => {
    const { client } = clientWith((request) =>
      request.params.name === 'self.fail'
        ? { result: { content: [{ type: 'text', text: 'no light here' }], isError: true } }
        : { result: { content: [{ type: 'text', text: '{"volume":40}' }], isError: false } },
    );
    await expect(client.call('self.audio_speaker.get_volume', {}, { signal: new AbortController().signal })).resolves.toBe('{"volume":40}');
    await expect(client.call('self.fail', {}, { signal: new AbortController().signal })).rejects.toThrow('no light here');
  });

  it('drops and counts an answer no request waits for, and refuses requests from the device', () => {
    const { client, sent, problems } = clientWith(() => undefined);
    client.receive({ jsonrpc: '2.0', id: 999, result: {} });
    client.receive({ jsonrpc: '2.0', id: 5, method: 'sampling/createMessage', params: {} });
    client.receive({ jsonrpc: '2.0', method: 'notifications/message', params: {} });
    expect(problems).toEqual(['device_mcp_unknown_id']);
    expect(sent).toEqual([{ jsonrpc: '2.0', id: 5, error: { code: -32601, message: expect.stringContaining('sampling/createMessage') } }]);
  });

  it('ends a call when its signal aborts, and every wait when the connection closes', async () => {
    const { client } = clientWith(() => undefined);
    const stop = new AbortController();
    const call = client.call('self.slow', {}, { signal: stop.signal });
    const other = client.call('self.slow', {}, { signal: new AbortController().signal });
    stop.abort(new Error('tool timeout'));
    await expect(call).rejects.toThrow('tool timeout');
    client.close();
    await expect(other).rejects.toThrow('disconnected');
    expect(client.waiting).toBe(0);
  });
});
