import { CalculatorModule } from '../../src/examples/calculator/calculator.module';
import { RunningGateway, startGateway } from '../support/gateway';
import { tickerRunFinished, TestToolsModule } from '../support/test-tools';
import { TestSocket } from '../support/test-socket';
import { Utcp01Client, UtcpRequestFailed } from '../support/utcp01-client';

describe('UTCP provider at /utcp (0.1 frames)', () => {
  let gateway: RunningGateway;

  beforeAll(async () => {
    gateway = await startGateway({ CLOUD_MAX_MESSAGE_SIZE: 4096 }, [CalculatorModule, TestToolsModule]);
  });
  afterAll(() => gateway.close());

  describe('a client written from the 0.1 spec', () => {
    let client: Utcp01Client;

    beforeEach(async () => {
      client = await Utcp01Client.connect(gateway.ws('/utcp'));
    });
    afterEach(() => client.close());

    it('discovers the tools by HTTP and by a first WebSocket message, alike', async () => {
      const overHttp = await Utcp01Client.discoverOverHttp(gateway.http('/utcp'));
      const overSocket = await client.discover();
      expect(overSocket).toMatchObject({ type: 'discovery_response', id: expect.any(String), utcp_version: '1.0.1' });
      expect(overSocket.tools).toEqual(overHttp.tools);
      expect(overHttp.tools.map((tool: { name: string }) => tool.name)).toEqual(
        expect.arrayContaining(['get_current_time', 'countdown', 'calculator', 'test.ticker']),
      );
    });

    it('calls a tool and gets its result', async () => {
      await expect(client.call('calculator', { a: 2, b: 3 })).resolves.toEqual({ partials: [], result: 5 });
      await expect(client.call('calculator', { a: 7, b: 2, operation: 'divide' })).resolves.toEqual({ partials: [], result: 3.5 });
      const time = await client.call('get_current_time', { timezone: 'Asia/Shanghai' });
      expect(time.result).toMatchObject({ timezone: 'Asia/Shanghai', utc_offset: '+08:00' });
    });

    it('streams the countdown: partial pieces, then the final result', async () => {
      const { partials, result } = await client.call('countdown', { seconds: 0.3, interval: 0.1, label: 'tea' });
      expect(partials).toEqual([0.3, 0.2, 0.1].map((remaining_s) => expect.objectContaining({ label: 'tea', remaining_s, done: false })));
      expect(result).toMatchObject({ label: 'tea', remaining_s: 0, done: true, ends_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) });
    });

    it('answers calls in flight together by id, each as it finishes', async () => {
      const order: string[] = [];
      const slow = client.call('countdown', { seconds: 0.4, interval: 0.2 }).then((answer) => (order.push('countdown'), answer));
      const quick = Array.from({ length: 10 }, (_, index) =>
        client.call('calculator', { a: index, b: 10, operation: 'multiply' }).then((answer) => (order.push(`calculator ${index}`), answer)),
      );
      expect((await Promise.all(quick)).map((answer) => answer.result)).toEqual(Array.from({ length: 10 }, (_, index) => index * 10));
      expect((await slow).result).toMatchObject({ done: true });
      expect(order.at(-1)).toBe('countdown');
    });

    it.each([
      ['an unknown tool', 'no_such_tool', {}, 'TOOL_NOT_FOUND', /Unknown tool "no_such_tool"/],
      ['invalid params', 'calculator', { a: 'two', b: 3 }, 'INVALID_TOOL_PARAMETERS', /argument "a" must be number/],
      ['params that are not an object', 'calculator', [1, 2], 'INVALID_TOOL_PARAMETERS', /must be a JSON object/],
      ['a tool that fails', 'calculator', { a: 1, b: 0, operation: 'divide' }, 'TOOL_EXECUTION_FAILED', /^Division by zero$/],
      ['a tool that runs out of time', 'test.sleepy', {}, 'TOOL_TIMEOUT', /did not finish within 0.1 s/],
      ['a streaming call with bad arguments', 'countdown', { seconds: -1 }, 'INVALID_TOOL_PARAMETERS', /"seconds" must be > 0/],
    ])('answers %s with an error frame carrying the call id and a stable code', async (_name, tool, params, code, message) => {
      const failure = (await client.call(tool, params as Record<string, unknown>).catch((error) => error)) as UtcpRequestFailed;
      expect(failure).toBeInstanceOf(UtcpRequestFailed);
      expect(failure.error).toEqual({ code, message: expect.stringMatching(message) });
      await expect(client.call('calculator', { a: 1, b: 1 })).resolves.toMatchObject({ result: 2 });
    });
  });

  describe('frames that cannot be served get an error frame, and the connection stays usable', () => {
    let socket: TestSocket;

    beforeEach(async () => {
      socket = await TestSocket.open(gateway.ws('/utcp'));
    });
    afterEach(() => socket.close());

    const stillUsable = async () => {
      socket.send({ type: 'call', id: 'after', tool: 'calculator', params: { a: 2, b: 2 } });
      expect(await socket.next()).toEqual({ type: 'result', id: 'after', result: 4 });
    };

    it.each([
      ['text that is not JSON', '{"type": "call", "id": 1,', null, 'INVALID_MESSAGE', /Invalid JSON/],
      ['a JSON array', '[1, 2]', null, 'INVALID_MESSAGE', /JSON object with a string "type"/],
      ['an object without type', { id: 'x1', tool: 'calculator' }, 'x1', 'INVALID_MESSAGE', /string "type"/],
      ['an unknown type', { type: 'list_tools', id: 'x2' }, 'x2', 'UNKNOWN_MESSAGE_TYPE', /"list_tools".*"call", "utcp", "discover" or "auth"/],
      ['a call without id', { type: 'call', tool: 'calculator', params: { a: 1, b: 2 } }, null, 'INVALID_MESSAGE', /id must be a non-empty string/],
      ['a call with an object id', { type: 'call', id: { n: 1 }, tool: 'calculator', params: {} }, null, 'INVALID_MESSAGE', /id must be/],
      ['a call without tool', { type: 'call', id: 'x3', params: {} }, 'x3', 'INVALID_MESSAGE', /tool must be a non-empty string/],
      ['a discovery with a bad id', { type: 'discover', id: '' }, null, 'INVALID_MESSAGE', /id must be/],
      [
        'a frame over the size limit',
        { type: 'call', id: 'x4', tool: 'calculator', pad: 'x'.repeat(5000) },
        null,
        'PAYLOAD_TOO_LARGE',
        /over the 4096-byte limit/,
      ],
    ])('%s', async (_name, frame, id, code, message) => {
      socket.send(frame);
      const answer = await socket.next();
      expect(answer).toEqual({ type: 'error', id, error: { code, message: expect.stringMatching(message) } });
      await stillUsable();
    });

    it('answers a numeric id with the same number', async () => {
      socket.send({ type: 'call', id: 42, tool: 'calculator', params: { a: 40, b: 2 } });
      expect(await socket.next()).toEqual({ type: 'result', id: 42, result: 42 });
    });

    it('answers {"type":"utcp"} with the bare manual, as 1.x clients expect', async () => {
      socket.send({ type: 'utcp' });
      const manual = await socket.next();
      expect(Object.keys(manual).sort()).toEqual(['manual_version', 'tools', 'utcp_version']);
      expect(manual.tools.find((tool: { name: string }) => tool.name === 'calculator')).toMatchObject({
        tool_call_template: { call_template_type: 'websocket', url: gateway.ws('/utcp/calculator') },
      });
    });

    it('acknowledges an auth frame even with auth off, echoing its id', async () => {
      socket.send({ type: 'auth', token: 'anything', id: 'a1' });
      expect(await socket.next()).toEqual({ type: 'auth_ok', id: 'a1' });
      await stillUsable();
    });
  });

  describe('when a caller goes away', () => {
    it('ends the calls of a closed connection and closes their generators', async () => {
      const socket = await TestSocket.open(gateway.ws('/utcp'));
      socket.send({ type: 'call', id: 't', tool: 'test.ticker', params: { run: 'closed-on-/utcp' } });
      expect(await socket.next()).toEqual({ type: 'result', id: 't', result: { tick: 1 }, partial: true });
      expect(await socket.next()).toMatchObject({ result: { tick: 2 }, partial: true });
      await socket.close();
      await expect(tickerRunFinished('closed-on-/utcp')).resolves.toBeUndefined();
    });
  });
});
