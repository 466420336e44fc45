import { get } from 'http';
import { ToolRegistryService } from '../../src/core/tools/tool-registry.service';
import { RunningGateway, startGateway } from '../support/gateway';
import { TestSocket } from '../support/test-socket';

/** GET with exactly these headers (fetch will not send a Host of our choosing). */
function getJson(url: string, headers: Record<string, string> = {}): Promise<{ status: number; type?: string; body: any }> {
  return new Promise((resolve, reject) => {
    get(url, { headers }, (response) => {
      let text = '';
      response.on('data', (chunk: Buffer) => (text += chunk.toString()));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, type: response.headers['content-type'], body: JSON.parse(text) }));
    }).on('error', reject);
  });
}

const urlsOf = (manual: { tools: { name: string; tool_call_template: { url: string } }[] }) =>
  Object.fromEntries(manual.tools.map((tool) => [tool.name, tool.tool_call_template.url]));

const PROXIED = { 'X-Forwarded-Proto': 'https', 'X-Forwarded-Host': 'tools.example.com', 'X-Forwarded-Prefix': '/voice/' };

describe('the UTCP manual', () => {
  let gateway: RunningGateway;

  beforeAll(async () => {
    // Bound to loopback, the gateway answers other host names only when they are allowed.
    gateway = await startGateway({ ALLOWED_HOSTS: 'voice.local' });
  });
  afterAll(() => gateway.close());

  it('lists every shared tool with its schemas, tags and a websocket template reaching it', async () => {
    const { status, type, body } = await getJson(gateway.http('/utcp'));
    expect(status).toBe(200);
    expect(type).toMatch(/^application\/json/);
    expect(body).toMatchObject({ utcp_version: '1.0.1', manual_version: '1.0.0' });
    const calculator = body.tools.find((tool: { name: string }) => tool.name === 'calculator');
    expect(calculator).toEqual({
      name: 'calculator',
      description: expect.stringMatching(/calculator/),
      inputs: expect.objectContaining({ required: ['a', 'b'] }),
      outputs: { type: 'number' },
      tags: ['math', 'example'],
      tool_call_template: {
        call_template_type: 'websocket',
        name: 'calculator',
        url: gateway.ws('/utcp/calculator'),
        response_format: 'json',
        timeout: 11,
      },
    });
    const shared = gateway.app.get(ToolRegistryService).list();
    expect(urlsOf(body)).toEqual(Object.fromEntries(shared.map((tool) => [tool.name, gateway.ws(`/utcp/${tool.name}`)])));
  });

  it('follows the catalogue as it changes, and leaves out client tools', async () => {
    const registry = gateway.app.get(ToolRegistryService);
    const spec = { description: 'Rolls a die', inputSchema: { type: 'object' }, handler: () => 4 };
    registry.register({ ...spec, name: 'dice.roll', source: 'mcp:dice' });
    registry.register({ ...spec, name: 'phone.battery', source: 'client:c1' }, 'c1');
    try {
      const names = (await getJson(gateway.http('/utcp'))).body.tools.map((tool: { name: string }) => tool.name);
      expect(names).toContain('dice.roll');
      expect(names).not.toContain('phone.battery');
    } finally {
      registry.unregister('dice.roll');
      registry.unregister('phone.battery', 'c1');
    }
    expect(urlsOf((await getJson(gateway.http('/utcp'))).body)).not.toHaveProperty(['dice.roll']);
  });

  it('points at the host the client used', async () => {
    const { body } = await getJson(gateway.http('/utcp'), { Host: 'voice.local:9400' });
    expect(urlsOf(body).calculator).toBe('ws://voice.local:9400/utcp/calculator');
  });

  it('points behind a proxy at the public scheme, host and prefix from X-Forwarded-*', async () => {
    const { body } = await getJson(gateway.http('/utcp'), { ...PROXIED, Host: `127.0.0.1:${gateway.port}` });
    const shared = gateway.app.get(ToolRegistryService).list();
    expect(urlsOf(body)).toEqual(Object.fromEntries(shared.map((tool) => [tool.name, `wss://tools.example.com/voice/utcp/${tool.name}`])));
  });

  it('is the same over the socket, for the headers of the upgrade, in both discovery frames', async () => {
    const socket = await TestSocket.open(gateway.ws('/utcp'), { headers: PROXIED });
    socket.send({ type: 'utcp' });
    socket.send({ type: 'discover', id: 7 });
    const [manual, discovered] = [await socket.next(), await socket.next()];
    await socket.close();
    expect(urlsOf(manual).countdown).toBe('wss://tools.example.com/voice/utcp/countdown');
    expect(discovered).toEqual({ type: 'discovery_response', id: 7, ...manual });
    const overHttp = (await getJson(gateway.http('/utcp'), { ...PROXIED, Host: `127.0.0.1:${gateway.port}` })).body;
    expect(manual).toEqual(overHttp);
  });

  it('gives templates that stream when asked with ?stream=true, and refuses a stream value it cannot read', async () => {
    expect(urlsOf((await getJson(gateway.http('/utcp?stream=true'))).body).countdown).toBe(gateway.ws('/utcp/countdown?stream=true'));
    expect(urlsOf((await getJson(gateway.http('/utcp?stream=false'))).body).countdown).toBe(gateway.ws('/utcp/countdown'));
    expect(await getJson(gateway.http('/utcp?stream=sometimes'))).toMatchObject({
      status: 400,
      body: { error: { code: 'INVALID_MESSAGE', message: expect.stringMatching(/"stream" query parameter/) } },
    });
  });
});
