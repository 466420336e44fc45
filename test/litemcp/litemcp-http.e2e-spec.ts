import { ToolRegistryService } from '../../src/core/tools/tool-registry.service';
import { RunningGateway, startGateway } from '../support/gateway';

const V = [1, 0, 0];

async function post(url: string, body: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as any, headers: response.headers };
}

describe('LiteMCP over HTTP', () => {
  let gateway: RunningGateway;

  beforeAll(async () => {
    gateway = await startGateway({ CLOUD_MAX_MESSAGE_SIZE: 2048 });
  });
  afterAll(() => gateway.close());

  it('GET returns the Tool', async () => {
    const response = await fetch(gateway.http('/litemcp/calculator'));
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ version: V, name: 'calculator', parameters: [{ name: 'a' }, { name: 'b' }, { name: 'operation' }] });
  });

  it('POST with a ToolCall returns the CallResult', async () => {
    expect(await post(gateway.http('/litemcp/calculator'), { version: V, tool: 'calculator', arguments: ['2', '3'] })).toMatchObject({
      status: 200,
      body: { version: V, params: { a: '2', b: '3' }, response: { content: [{ type: 'number', data: '5' }], error: false } },
    });
  });

  it('answers a tool that ran and failed with 200 and error: true', async () => {
    const { status, body } = await post(gateway.http('/litemcp/calculator'), { tool: 'calculator', arguments: ['1', '0', 'divide'] });
    expect(status).toBe(200);
    expect(body.response).toEqual({ content: [{ type: 'text', data: 'Division by zero' }], error: true });
  });

  it.each([
    [
      'a device that is not connected (a failure naming DEVICE_OFFLINE)',
      'device_say',
      ['nobody-here', '', 'Dinner is ready.'],
      'Device "nobody-here" is not connected',
    ],
    ['a fault of the tool (a plain Error)', 'test.breaks', [], 'Tool "test.breaks" failed with an internal error'],
  ])(
    'answers a tool that ran and failed for %s with 200 too: the failure is in the CallResult, as the protocol carries it',
    async (_name, tool, args, text) => {
      const registry = gateway.app.get(ToolRegistryService);
      registry.register({
        name: 'test.breaks',
        description: 'Breaks',
        inputSchema: { type: 'object' },
        source: 'module',
        handler: () => {
          throw new Error('secret connection string');
        },
      });
      try {
        const { status, body } = await post(gateway.http(`/litemcp/${tool}`), { tool, arguments: args });
        expect(status).toBe(200);
        expect(body.response).toEqual({ content: [{ type: 'text', data: text }], error: true });
      } finally {
        registry.unregister('test.breaks');
      }
    },
  );

  it.each([
    ['bad arguments', { tool: 'calculator', arguments: ['x', '1'] }, 400, /Argument "a" must be number/],
    ['a missing argument', { tool: 'calculator', arguments: ['1'] }, 400, /missing required argument "b"/],
    ['a body that is not a ToolCall', { tool: 5 }, 400, /tool must be a string/],
    ['invalid JSON', '{"tool": ', 400, /JSON/],
    ['another major version', { version: [2, 0, 0], tool: 'calculator', arguments: [] }, 400, /not supported/],
    ['a call naming another tool', { tool: 'get_current_time', arguments: [] }, 400, /serves tool "calculator"/],
    ['a body over the size limit', { tool: 'calculator', arguments: ['1', 'x'.repeat(4000)] }, 413, /over the 2048-byte limit/],
  ])('answers %s with %i and a CallResult marked error: true', async (_name, body, status, message) => {
    const response = await post(gateway.http('/litemcp/calculator'), body);
    expect(response.status).toBe(status);
    expect(response.body).toMatchObject({ version: V, response: { error: true } });
    expect(response.body.response.content[0].data).toMatch(message);
  });

  it('answers an unknown tool with 404', async () => {
    const get = await fetch(gateway.http('/litemcp/nope'));
    expect(get.status).toBe(404);
    expect(await get.json()).toEqual({ error: { code: 'TOOL_NOT_FOUND', message: 'Unknown tool "nope"' } });
    const { status, body } = await post(gateway.http('/litemcp/nope'), { tool: 'nope', arguments: [] });
    expect(status).toBe(404);
    expect(body.response.error).toBe(true);
  });
});

describe('LiteMCP over HTTP with auth on', () => {
  let gateway: RunningGateway;

  beforeAll(async () => {
    gateway = await startGateway({ AUTH_TOKENS: 'secret' });
  });
  afterAll(() => gateway.close());

  it('answers 401 without a token, 403 with a wrong one, 200 with the right one', async () => {
    const call = { tool: 'calculator', arguments: ['1', '1'] };
    const missing = await post(gateway.http('/litemcp/calculator'), call);
    expect(missing.status).toBe(401);
    expect(missing.headers.get('www-authenticate')).toBe('Bearer');
    expect(missing.body.response.error).toBe(true);
    expect((await post(gateway.http('/litemcp/calculator'), call, { Authorization: 'Bearer wrong' })).status).toBe(403);
    expect((await post(gateway.http('/litemcp/calculator'), call, { Authentication: 'Bearer secret' })).status).toBe(200);
    expect((await fetch(gateway.http('/litemcp/calculator'))).status).toBe(401);
    expect((await fetch(gateway.http('/litemcp/calculator'), { headers: { Authorization: 'Bearer secret' } })).status).toBe(200);
  });

  it('leaves /health open for load balancers', async () => {
    const response = await fetch(gateway.http('/health'));
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ status: 'ok', info: { tools: { status: 'up', count: 23 } } });
  });
});
