import { ToolRegistryService } from '../../src/core/tools/tool-registry.service';
import { RunningGateway, startGateway } from '../support/gateway';

const TOKEN = 'token-of-the-param-header-tests';
const MODERN = '2026-07-28';

/**
 * SEP-2243 on `/mcp` at 2026-07-28: a tool whose parameter declares `x-mcp-header` is called with
 * that parameter mirrored in an `Mcp-Param-*` header, which the server must check against the
 * body before the tool runs (400 and -32020 when it is missing, malformed or different).
 */
describe('MCP 2026-07-28: Mcp-Param-* headers checked against x-mcp-header parameters', () => {
  let gateway: RunningGateway;
  const calls: unknown[] = [];

  beforeAll(async () => {
    gateway = await startGateway({ AUTH_TOKENS: TOKEN });
    gateway.app.get(ToolRegistryService).register({
      name: 'weather_in',
      description: 'The weather of a region, routed by region',
      inputSchema: {
        type: 'object',
        properties: { region: { type: 'string', 'x-mcp-header': 'Region' }, days: { type: 'integer' } },
        required: ['region'],
      },
      source: 'module',
      handler: (args) => {
        calls.push(args);
        return `sunny in ${String(args.region)}`;
      },
    });
  }, 60_000);

  afterAll(async () => {
    await gateway?.close();
  });

  async function call(region: unknown, headers: Record<string, string>): Promise<{ status: number; body: Record<string, any> }> {
    const response = await fetch(gateway.http('/mcp'), {
      method: 'POST',
      headers: {
        authorization: `Bearer ${TOKEN}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': MODERN,
        'mcp-method': 'tools/call',
        'mcp-name': 'weather_in',
        ...headers,
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: {
          name: 'weather_in',
          arguments: { region },
          _meta: {
            'io.modelcontextprotocol/protocolVersion': MODERN,
            'io.modelcontextprotocol/clientCapabilities': {},
            'io.modelcontextprotocol/clientInfo': { name: 'param-header-e2e', version: '1.0.0' },
          },
        },
      }),
    });
    const text = await response.text();
    const data = text.startsWith('{') ? text : (/^data: (.*)$/m.exec(text)?.[1] ?? '{}');
    return { status: response.status, body: JSON.parse(data) as Record<string, any> };
  }

  it('runs the call whose header carries the parameter, plain or as the Base64 sentinel', async () => {
    expect(await call('Europe', { 'mcp-param-region': 'Europe' })).toMatchObject({ status: 200, body: { result: { content: [{ text: 'sunny in Europe' }] } } });
    const encoded = `=?base64?${Buffer.from('Île-de-France').toString('base64')}?=`;
    expect(await call('Île-de-France', { 'mcp-param-region': encoded })).toMatchObject({
      status: 200,
      body: { result: { content: [{ text: 'sunny in Île-de-France' }] } },
    });
  });

  it('refuses, before the tool runs, a header that is missing, malformed or unlike the body: 400 and -32020', async () => {
    const before = calls.length;
    const wrong: Record<string, string>[] = [{}, { 'mcp-param-region': 'Asia' }, { 'mcp-param-region': '=?base64?not base64!?=' }];
    for (const headers of wrong) {
      const { status, body } = await call('Europe', headers);
      expect(status).toBe(400);
      expect(body.error).toMatchObject({
        code: -32020,
        message: expect.stringContaining('Mcp-Param-Region'),
        data: { mismatch: { header: 'Mcp-Param-Region' } },
      });
    }
    expect(calls.length).toBe(before);
  });

  it('expects no header when the body leaves the parameter out, and the tool answers for itself', async () => {
    const { status, body } = await call(null, {});
    expect(status).toBe(200);
    expect(body.result ?? body.error).toBeDefined();
  });
});
