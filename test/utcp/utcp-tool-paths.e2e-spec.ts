import { CalculatorModule } from '../../src/examples/calculator/calculator.module';
import { RunningGateway, startGateway } from '../support/gateway';
import { tickerRunFinished, TestToolsModule } from '../support/test-tools';
import { TestSocket } from '../support/test-socket';
import { Utcp1WebSocketClient } from '../support/utcp1-client';

const collect = async <T>(pieces: AsyncIterable<T>): Promise<T[]> => {
  const all: T[] = [];
  for await (const piece of pieces) all.push(piece);
  return all;
};

describe('UTCP per-tool paths at /utcp/<tool> (1.x clients)', () => {
  let gateway: RunningGateway;

  beforeAll(async () => {
    gateway = await startGateway({ CLOUD_MAX_MESSAGE_SIZE: 4096 }, [CalculatorModule, TestToolsModule]);
  });
  afterAll(() => gateway.close());

  describe('a client that behaves like the UTCP 1.x websocket plugin', () => {
    let client: Utcp1WebSocketClient;

    beforeEach(() => {
      client = new Utcp1WebSocketClient();
    });
    afterEach(() => client.close());

    it('discovers by {"type":"utcp"} and calls tools by their templates, with the raw arguments', async () => {
      const tools = await client.registerManual({ name: 'voice gateway', call_template_type: 'websocket', url: gateway.ws('/utcp') });
      expect(tools.map((tool) => tool.name)).toEqual(
        expect.arrayContaining(['voice_gateway.calculator', 'voice_gateway.countdown', 'voice_gateway.get_current_time']),
      );
      await expect(client.callTool('voice_gateway.calculator', { a: 2, b: 3 })).resolves.toBe(5);
      await expect(client.callTool('voice_gateway.calculator', { a: 9, b: 3, operation: 'divide' })).resolves.toBe(3);
      await expect(client.callTool('voice_gateway.get_current_time', { timezone: 'UTC' })).resolves.toMatchObject({ utc_offset: '+00:00' });
      await expect(client.callTool('voice_gateway.test.convert', { type: 'celsius', value: 100 })).resolves.toBe(212);
    });

    it("gets a streaming tool's final result from a plain call", async () => {
      await client.registerManual({ name: 'gw', call_template_type: 'websocket', url: gateway.ws('/utcp') });
      await expect(client.callTool('gw.countdown', { seconds: 0.2, interval: 0.1 })).resolves.toMatchObject({ remaining_s: 0, done: true });
    });

    it('receives a failure as the tool_error frame, and the connection serves the next call', async () => {
      await client.registerManual({ name: 'gw', call_template_type: 'websocket', url: gateway.ws('/utcp') });
      await expect(client.callTool('gw.calculator', { a: 1, b: 0, operation: 'divide' })).resolves.toEqual({
        type: 'tool_error',
        error: 'Division by zero',
        code: 'TOOL_EXECUTION_FAILED',
      });
      await expect(client.callTool('gw.calculator', { a: 1 })).resolves.toMatchObject({ type: 'tool_error', code: 'INVALID_TOOL_PARAMETERS' });
      await expect(client.callTool('gw.calculator', { a: 1, b: 1 })).resolves.toBe(2);
    });

    it('streams with call_tool_streaming from a manual discovered at /utcp?stream=true', async () => {
      const tools = await client.registerManual({ name: 'gw_stream', call_template_type: 'websocket', url: gateway.ws('/utcp?stream=true') });
      expect(tools.find((tool) => tool.name === 'gw_stream.countdown')?.tool_call_template.url).toBe(gateway.ws('/utcp/countdown?stream=true'));
      const updates = await collect(client.callToolStreaming('gw_stream.countdown', { seconds: 0.3, interval: 0.1, label: 'eggs' }));
      expect(updates).toEqual([0.3, 0.2, 0.1, 0].map((remaining_s) => expect.objectContaining({ label: 'eggs', remaining_s, done: remaining_s === 0 })));
      expect(await collect(client.callToolStreaming('gw_stream.calculator', { a: 6, b: 7, operation: 'multiply' }))).toEqual([42]);
      await expect(collect(client.callToolStreaming('gw_stream.countdown', { seconds: 0 }))).rejects.toThrow(
        /Tool gw_stream.countdown failed: .*"seconds" must be > 0/,
      );
      expect(await collect(client.callToolStreaming('gw_stream.countdown', { seconds: 0.1 }))).toEqual([
        expect.objectContaining({ remaining_s: 0.1 }),
        expect.objectContaining({ done: true }),
      ]);
    });

    it('calls through a message template of its own, here the 0.1 call frame sent to /utcp', async () => {
      client.registerTools('handmade', [
        {
          name: 'add',
          tool_call_template: {
            call_template_type: 'websocket',
            name: 'handmade',
            url: gateway.ws('/utcp'),
            message: '{"type": "call", "id": "add-1", "tool": "calculator", "params": {"a": UTCP_ARG_a_UTCP_ARG, "b": UTCP_ARG_b_UTCP_ARG}}',
            response_format: 'json',
          },
        },
        {
          name: 'time_in',
          tool_call_template: {
            call_template_type: 'websocket',
            name: 'handmade',
            url: gateway.ws('/utcp'),
            message: { type: 'call', id: 'time-1', tool: 'get_current_time', params: { timezone: 'UTCP_ARG_zone_UTCP_ARG' } },
            response_format: 'json',
          },
        },
      ]);
      await expect(client.callTool('handmade.add', { a: 20, b: 22 })).resolves.toEqual({ type: 'result', id: 'add-1', result: 42 });
      await expect(client.callTool('handmade.time_in', { zone: 'Asia/Shanghai' })).resolves.toMatchObject({
        type: 'result',
        id: 'time-1',
        result: { timezone: 'Asia/Shanghai' },
      });
    });
  });

  describe('frames on a per-tool connection', () => {
    let socket: TestSocket;

    afterEach(() => socket?.close());

    it('answers every frame, in the order they came, even when an earlier call takes longer', async () => {
      socket = await TestSocket.open(gateway.ws('/utcp/countdown'));
      socket.send({ seconds: 0.3, interval: 0.3, label: 'first' });
      socket.send({ seconds: 0.05, label: 'second' });
      socket.send('not json');
      socket.send({ seconds: 0 });
      socket.send([1]);
      socket.send({ seconds: 0.05, label: 'last' });
      expect(await socket.next()).toMatchObject({ label: 'first', done: true });
      expect(await socket.next()).toMatchObject({ label: 'second', done: true });
      expect(await socket.next()).toEqual({
        type: 'tool_error',
        code: 'INVALID_MESSAGE',
        error: expect.stringMatching(/Invalid JSON.*send the arguments as a JSON object/),
      });
      expect(await socket.next()).toEqual({ type: 'tool_error', code: 'INVALID_TOOL_PARAMETERS', error: expect.stringMatching(/"seconds" must be > 0/) });
      expect(await socket.next()).toEqual({ type: 'tool_error', code: 'INVALID_TOOL_PARAMETERS', error: expect.stringMatching(/must be a JSON object/) });
      expect(await socket.next()).toMatchObject({ label: 'last', done: true });
    });

    it('keeps the order of streamed calls too: each stream ends before the next begins', async () => {
      socket = await TestSocket.open(gateway.ws('/utcp/countdown?stream=1'));
      socket.send({ seconds: 0.2, interval: 0.1, label: 'a' });
      socket.send({ seconds: 0.1, interval: 0.1, label: 'b' });
      const frames = await Promise.all(Array.from({ length: 7 }, () => socket.next()));
      expect(frames.map((frame) => (frame.type === 'stream_end' ? 'end' : `${frame.result.label} ${frame.result.remaining_s}`))).toEqual([
        'a 0.2',
        'a 0.1',
        'a 0',
        'end',
        'b 0.1',
        'b 0',
        'end',
      ]);
    });

    it('takes arguments that have a "type" field of their own', async () => {
      socket = await TestSocket.open(gateway.ws('/utcp/test.convert'));
      socket.send({ type: 'fahrenheit', value: 212 });
      expect(await socket.next()).toBe(100);
    });

    it('answers a frame over the size limit with PAYLOAD_TOO_LARGE and serves the next', async () => {
      socket = await TestSocket.open(gateway.ws('/utcp/countdown'));
      socket.send({ seconds: 1, pad: 'x'.repeat(5000) });
      expect(await socket.next()).toEqual({ type: 'tool_error', code: 'PAYLOAD_TOO_LARGE', error: expect.stringMatching(/4096-byte limit/) });
      socket.send({ seconds: 0.01 });
      expect(await socket.next()).toMatchObject({ done: true });
    });

    it('refuses an unknown tool with 404 and a bad stream parameter with 400, before any socket exists', async () => {
      await expect(TestSocket.open(gateway.ws('/utcp/no_such_tool'))).rejects.toMatchObject({ status: 404 });
      await expect(TestSocket.open(gateway.ws('/utcp/calculator?stream=maybe'))).rejects.toMatchObject({
        status: 400,
        body: expect.stringMatching(/stream.{1,4} query parameter must be/),
      });
      await expect(TestSocket.open(gateway.ws('/utcp?stream=maybe'))).rejects.toMatchObject({ status: 400 });
      await expect(TestSocket.open(gateway.ws('/utcp/calculator/extra'))).rejects.toMatchObject({ status: 404 });
    });

    it('ends the call of a closed connection and closes its generator, streaming or not', async () => {
      for (const path of ['/utcp/test.ticker?stream=true', '/utcp/test.ticker']) {
        const run = `closed-on-${path}`;
        const ticker = await TestSocket.open(gateway.ws(path));
        ticker.send({ run });
        if (path.endsWith('stream=true')) expect(await ticker.next()).toEqual({ type: 'tool_response', result: { tick: 1 } });
        else await ticker.expectSilence(60);
        await ticker.close();
        await expect(tickerRunFinished(run)).resolves.toBeUndefined();
      }
    });
  });
});
