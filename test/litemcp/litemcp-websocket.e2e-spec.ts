import { ToolRegistryService } from '../../src/core/tools/tool-registry.service';
import { LiteMcpClient } from '../support/litemcp-client';
import { RunningGateway, startGateway } from '../support/gateway';
import { eventually } from '../support/probing';
import { TestSocket, UpgradeRefused } from '../support/test-socket';

const V = [1, 0, 0];

describe('LiteMCP over WebSocket', () => {
  let gateway: RunningGateway;
  let socket: TestSocket;

  beforeAll(async () => {
    gateway = await startGateway({ CLOUD_MAX_MESSAGE_SIZE: 4096 });
  });
  afterAll(() => gateway.close());

  beforeEach(async () => {
    socket = await TestSocket.open(gateway.ws('/litemcp/calculator'));
  });
  afterEach(() => socket.close());

  describe('a client written from the spec', () => {
    it('discovers and calls the calculator', async () => {
      const client = await LiteMcpClient.connect(gateway.ws('/litemcp/calculator'));
      const tool = await client.info();
      expect(tool).toMatchObject({ version: V, name: 'calculator', example: 'Calculate the sum of 2 and 3' });
      expect(tool.parameters.map((p: { name: string }) => p.name)).toEqual(['a', 'b', 'operation']);
      expect(await client.call('calculator', ['2', '3'])).toEqual({
        version: V,
        params: { a: '2', b: '3' },
        response: { content: [{ type: 'number', data: '5' }], error: false },
      });
      expect((await client.call('calculator', ['7', '2', 'divide'])).response.content).toEqual([{ type: 'number', data: '3.5' }]);
      client.close();
    });

    it('discovers and calls get_current_time, with and without a time zone', async () => {
      const client = await LiteMcpClient.connect(gateway.ws('/litemcp/get_current_time'));
      expect((await client.info()).parameters).toEqual([expect.objectContaining({ name: 'timezone', type: 'string', example: 'Asia/Shanghai' })]);
      const shanghai = await client.call('get_current_time', ['Asia/Shanghai']);
      expect(shanghai.response.error).toBe(false);
      expect(JSON.parse(shanghai.response.content[0].data)).toMatchObject({ timezone: 'Asia/Shanghai', utc_offset: '+08:00' });
      const local = await client.call('get_current_time', []);
      expect(JSON.parse(local.response.content[0].data).iso).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}[+-]\d{2}:\d{2}$/);
      const bad = await client.call('get_current_time', ['Mars/Olympus']);
      expect(bad.response).toEqual({ content: [{ type: 'text', data: expect.stringMatching(/Unknown time zone "Mars\/Olympus"/) }], error: true });
      client.close();
    });
  });

  it('answers concurrent calls by id', async () => {
    for (let id = 1; id <= 20; id += 1) {
      socket.send({ version: V, id, type: 'call', data: { version: V, tool: 'calculator', arguments: [String(id), '1', 'multiply'] } });
    }
    const answers = await Promise.all(Array.from({ length: 20 }, () => socket.next()));
    expect(answers.map((a) => [a.id, a.data.response.content[0].data]).sort((x, y) => x[0] - y[0])).toEqual(
      Array.from({ length: 20 }, (_, index) => [index + 1, String(index + 1)]),
    );
  });

  it('ignores a request whose id it has already seen', async () => {
    socket.send({ version: V, id: 7, type: 'get', data: null });
    expect(await socket.next()).toMatchObject({ id: 7, type: 'info' });
    socket.send({ version: V, id: 7, type: 'call', data: { tool: 'calculator', arguments: ['1', '1'] } });
    await socket.expectSilence();
    socket.send({ version: V, id: 8, type: 'get' });
    expect(await socket.next()).toMatchObject({ id: 8, type: 'info' });
  });

  it('stops a call when its socket closes, so no tool runs on for nobody', async () => {
    const registry = gateway.app.get(ToolRegistryService);
    const timer = await TestSocket.open(gateway.ws('/litemcp/countdown'));
    timer.send({ version: V, id: 1, type: 'call', data: { version: V, tool: 'countdown', arguments: ['600'] } });
    await eventually(() => registry.callsRunning === 1, 'the countdown is running');
    await timer.close();
    await eventually(() => registry.callsRunning === 0, 'the countdown stopped with its socket', 1000);
  });

  describe('bad input gets an answer and the connection stays usable', () => {
    const stillUsable = async () => {
      socket.send({ version: V, id: 999, type: 'call', data: { tool: 'calculator', arguments: ['1', '2'] } });
      expect(await socket.next()).toMatchObject({ id: 999, type: 'result', data: { response: { error: false } } });
    };

    it.each([
      ['text that is not JSON', '{"version": [1,0,0], "id": 3,', null, 'INVALID_MESSAGE', /Invalid JSON/],
      ['a JSON array', '[1,2,3]', null, 'INVALID_MESSAGE', /JSON object with a string "type"/],
      ['a frame without type', { version: V, id: 3 }, 3, 'INVALID_MESSAGE', /"type"/],
      ['an unknown type', { version: V, id: 3, type: 'list' }, 3, 'UNKNOWN_MESSAGE_TYPE', /"list".*"get" or "call"/],
      ['a missing id', { version: V, type: 'get' }, null, 'INVALID_MESSAGE', /id must be an integer/],
      ['a string id', { version: V, id: 'x', type: 'get' }, null, 'INVALID_MESSAGE', /id must be an integer/],
      ['a missing version', { id: 3, type: 'get' }, 3, 'INVALID_MESSAGE', /version must be an array/],
      ['a two-part version', { version: [1, 0], id: 3, type: 'get' }, 3, 'INVALID_MESSAGE', /version must be an array/],
      ['another major version', { version: [2, 0, 0], id: 3, type: 'get' }, 3, 'UNSUPPORTED_VERSION', /2\.0\.0 is not supported/],
      ['get with array data', { version: V, id: 3, type: 'get', data: [1] }, 3, 'INVALID_MESSAGE', /data must be null or \{\}/],
    ])('%s -> error frame', async (_name, frame, id, code, message) => {
      socket.send(frame);
      const answer = await socket.next();
      expect(answer).toMatchObject({ version: V, id, type: 'error', data: { code } });
      expect(answer.data.message).toMatch(message);
      await stillUsable();
    });

    it.each([
      ['no data', { version: V, id: 4, type: 'call' }, /data must be a ToolCall object/],
      ['arguments not an array', { version: V, id: 4, type: 'call', data: { tool: 'calculator', arguments: '1,2' } }, /arguments must be an array/],
      ['an object argument', { version: V, id: 4, type: 'call', data: { tool: 'calculator', arguments: [{}, '2'] } }, /arguments must be an array of strings/],
      [
        'another tool',
        { version: V, id: 4, type: 'call', data: { tool: 'get_current_time', arguments: [] } },
        /serves tool "calculator", but the call names "get_current_time"/,
      ],
      [
        'a ToolCall of another major version',
        { version: V, id: 4, type: 'call', data: { version: [3, 0, 0], tool: 'calculator', arguments: ['1', '2'] } },
        /3\.0\.0 is not supported/,
      ],
      [
        'too many arguments',
        { version: V, id: 4, type: 'call', data: { tool: 'calculator', arguments: ['1', '2', 'add', 'x'] } },
        /takes at most 3 argument\(s\) \(a, b, operation\), got 4/,
      ],
      ['a missing argument', { version: V, id: 4, type: 'call', data: { tool: 'calculator', arguments: ['1'] } }, /missing required argument "b"/],
      [
        'a non-numeric argument',
        { version: V, id: 4, type: 'call', data: { tool: 'calculator', arguments: ['one', '2'] } },
        /Argument "a" must be number, got "one"/,
      ],
      [
        'an argument outside its enum',
        { version: V, id: 4, type: 'call', data: { tool: 'calculator', arguments: ['1', '2', 'pow'] } },
        /must be one of: "add", "subtract", "multiply", "divide"/,
      ],
      ['a failing tool', { version: V, id: 4, type: 'call', data: { tool: 'calculator', arguments: ['1', '0', 'divide'] } }, /^Division by zero$/],
    ])('a call with %s -> result with error: true', async (_name, frame, message) => {
      socket.send(frame);
      const answer = await socket.next();
      expect(answer).toMatchObject({ version: V, id: 4, type: 'result', data: { response: { error: true } } });
      expect(answer.data.response.content).toEqual([{ type: 'text', data: expect.stringMatching(message) }]);
      await stillUsable();
    });

    it.each(['1e400', '-1e400', '9007199254740993', '-9007199254740993', '9007199254740992'])(
      'answers every get and call whose id %s a JSON number cannot hold exactly, with an error frame and id null',
      async (id) => {
        // Sent twice each: read as one number (Infinity, or 2^53), the second would look like a repeat to ignore.
        for (const frame of [
          `{"version":[1,0,0],"id":${id},"type":"get"}`,
          `{"version":[1,0,0],"id":${id},"type":"call","data":{"tool":"calculator","arguments":["1","2"]}}`,
        ]) {
          for (let attempt = 0; attempt < 2; attempt += 1) {
            socket.send(frame);
            expect(await socket.next()).toEqual({
              version: V,
              id: null,
              type: 'error',
              data: { code: 'INVALID_MESSAGE', message: 'id must be an integer from -(2^53 - 1) to 2^53 - 1: a larger one cannot be read exactly' },
            });
          }
        }
        await stillUsable();
      },
    );

    it('serves the largest ids JSON numbers hold exactly, and -0 as 0', async () => {
      socket.send(`{"version":[1,0,0],"id":9007199254740991,"type":"get"}`);
      expect(await socket.next()).toMatchObject({ id: Number.MAX_SAFE_INTEGER, type: 'info' });
      socket.send(`{"version":[1,0,0],"id":-9007199254740991,"type":"get"}`);
      expect(await socket.next()).toMatchObject({ id: -Number.MAX_SAFE_INTEGER, type: 'info' });
      socket.send(`{"version":[1,0,0],"id":-0,"type":"get"}`);
      expect(await socket.next()).toMatchObject({ id: 0, type: 'info' });
      socket.send(`{"version":[1,0,0],"id":1.5,"type":"get"}`);
      expect(await socket.next()).toMatchObject({ id: null, type: 'error', data: { code: 'INVALID_MESSAGE', message: 'id must be an integer' } });
    });

    it('accepts numbers as arguments, read as their text', async () => {
      socket.send({ version: V, id: 5, type: 'call', data: { tool: 'calculator', arguments: [2, 3] } });
      expect(await socket.next()).toMatchObject({ data: { params: { a: '2', b: '3' }, response: { content: [{ data: '5' }] } } });
    });

    it('answers a frame over the size limit and keeps the connection', async () => {
      socket.send({ version: V, id: 6, type: 'get', pad: 'x'.repeat(5000) });
      const answer = await socket.next();
      expect(answer).toMatchObject({ id: null, type: 'error', data: { code: 'PAYLOAD_TOO_LARGE' } });
      expect(answer.data.message).toMatch(/over the 4096-byte limit/);
      await stillUsable();
    });

    it('closes with 1009 only for a frame far beyond the limit', async () => {
      socket.send('x'.repeat(4096 * 16 + 1));
      expect((await socket.closed).code).toBe(1009);
      const fresh = await TestSocket.open(gateway.ws('/litemcp/calculator'));
      fresh.send({ version: V, id: 1, type: 'get' });
      expect(await fresh.next()).toMatchObject({ type: 'info' });
      await fresh.close();
    });
  });

  describe('upgrade refusals', () => {
    it('refuses an unknown tool with 404 and no socket', async () => {
      await expect(TestSocket.open(gateway.ws('/litemcp/no_such_tool'))).rejects.toMatchObject({ status: 404 });
    });

    it('refuses a path nobody serves with 404', async () => {
      await expect(TestSocket.open(gateway.ws('/litemcp'))).rejects.toMatchObject({ status: 404 });
      await expect(TestSocket.open(gateway.ws('/nowhere'))).rejects.toMatchObject({ status: 404 });
    });
  });
});

describe('LiteMCP over WebSocket with auth on', () => {
  let gateway: RunningGateway;

  beforeAll(async () => {
    gateway = await startGateway({ AUTH_TOKENS: 'device-token,other-token' });
  });
  afterAll(() => gateway.close());

  it('refuses an upgrade without a token with 401', async () => {
    const refusal = (await TestSocket.open(gateway.ws('/litemcp/calculator')).catch((e) => e)) as UpgradeRefused;
    expect(refusal).toBeInstanceOf(UpgradeRefused);
    expect(refusal.status).toBe(401);
    expect(refusal.headers['www-authenticate']).toBe('Bearer');
    expect(JSON.parse(refusal.body)).toEqual({ error: { status: 401, message: expect.stringMatching(/Authentication required/) } });
  });

  it('refuses a wrong token with 403', async () => {
    await expect(TestSocket.open(gateway.ws('/litemcp/calculator'), { headers: { Authorization: 'Bearer nope' } })).rejects.toMatchObject({ status: 403 });
  });

  it('checks the token before revealing whether a tool exists', async () => {
    await expect(TestSocket.open(gateway.ws('/litemcp/no_such_tool'))).rejects.toMatchObject({ status: 401 });
  });

  it.each([
    ['Authorization', { Authorization: 'Bearer device-token' }],
    ["the spec's Authentication", { Authentication: 'Bearer other-token' }],
  ])('accepts the token in %s', async (_name, headers) => {
    const socket = await TestSocket.open(gateway.ws('/litemcp/calculator'), { headers });
    socket.send({ version: V, id: 1, type: 'call', data: { tool: 'calculator', arguments: ['2', '2'] } });
    expect(await socket.next()).toMatchObject({ type: 'result', data: { response: { content: [{ data: '4' }] } } });
    await socket.close();
  });

  it('works with the spec-only client and a token', async () => {
    const client = await LiteMcpClient.connect(gateway.ws('/litemcp/calculator'), 'device-token');
    expect((await client.call('calculator', ['10', '4', 'subtract'])).response.content[0].data).toBe('6');
    client.close();
  });
});
