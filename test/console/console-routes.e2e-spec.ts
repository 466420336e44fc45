import { RunningGateway, startGateway } from '../support/gateway';
import { TestSocket } from '../support/test-socket';

const TOKEN = 'console-token';

describe('web console and tool catalogue routes', () => {
  describe('with the console on (the default)', () => {
    let gateway: RunningGateway;

    beforeAll(async () => {
      gateway = await startGateway({ AUTH_TOKENS: TOKEN });
    });
    afterAll(() => gateway.close());

    it.each(['/', '/console', '/console/'])('serves the page at %s, as static HTML that loads nothing from elsewhere', async (path) => {
      const response = await fetch(gateway.http(path));
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/^text\/html/);
      expect(response.headers.get('content-security-policy')).toContain("default-src 'self'");
      // another gateway, named in the page's URL field, over WebSocket and HTTP
      expect(response.headers.get('content-security-policy')).toContain("connect-src 'self' ws: wss: http: https:");
      const page = await response.text();
      expect(page).toContain('<title>Gateway console</title>');
      expect(page).not.toMatch(/(src|href)="(https?:)?\/\//);
    });

    it("serves the console's modules and the client SDK's browser build, and nothing else", async () => {
      const app = await fetch(gateway.http('/console/app.js'));
      expect(app.status).toBe(200);
      expect(app.headers.get('content-type')).toMatch(/^(text|application)\/javascript/);
      expect(await app.text()).toContain("from './sdk/index.js'");
      const sdk = await fetch(gateway.http('/console/sdk/index.js'));
      expect(sdk.status).toBe(200);
      expect(await sdk.text()).toContain('LlmGatewayClient');
      expect((await fetch(gateway.http('/console/sdk/client.js'))).status).toBe(200);
      for (const path of ['/console/sdk/index.d.ts', '/console/missing.js', '/console/..%2F..%2Fpackage.json', '/console/sdk/../../package.json']) {
        const response = await fetch(gateway.http(path));
        expect([path, response.status]).toEqual([path, 404]);
      }
    });

    it('keeps WebSocket upgrades on / for the LLM gateway', async () => {
      const socket = await TestSocket.open(gateway.ws(`/?token=${TOKEN}`));
      expect(await socket.next()).toMatchObject({ type: 'status', status: 'connected' });
      await socket.close();
      await expect(TestSocket.open(gateway.ws('/'))).rejects.toMatchObject({ status: 401 });
    });

    it('lists the catalogue at GET /tools behind the bearer check', async () => {
      expect((await fetch(gateway.http('/tools'))).status).toBe(401);
      expect((await fetch(gateway.http('/tools'), { headers: { Authorization: 'Bearer wrong' } })).status).toBe(403);
      const response = await fetch(gateway.http(`/tools?token=${TOKEN}`));
      expect(response.status).toBe(200);
      const { tools } = (await response.json()) as any;
      const calculator = tools.find((tool: any) => tool.name === 'calculator');
      expect(calculator).toEqual({
        name: 'calculator',
        description: expect.any(String),
        source: 'module',
        tags: ['math', 'example'],
        inputSchema: expect.objectContaining({ type: 'object', required: ['a', 'b'] }),
        outputSchema: { type: 'number' },
        examples: [expect.objectContaining({ arguments: { a: 2, b: 3, operation: 'add' } })],
        timeoutMs: 10_000,
      });
      expect(tools.find((tool: any) => tool.name === 'get_weather')).toMatchObject({ source: 'builtin' });
      expect(tools.every((tool: any) => !('handler' in tool))).toBe(true);
    });

    it("does not list a connection's own device tools", async () => {
      const socket = await TestSocket.open(gateway.ws(`/?token=${TOKEN}`));
      await socket.next();
      socket.send({ type: 'register_tools', tools: [{ name: 'private_tool', description: 'x', parameters: { type: 'object' } }] });
      expect(await socket.next()).toMatchObject({ type: 'tools_registered', count: 1 });
      const { tools } = (await (await fetch(gateway.http('/tools'), { headers: { Authorization: `Bearer ${TOKEN}` } })).json()) as any;
      expect(tools.map((tool: any) => tool.name)).not.toContain('private_tool');
      await socket.close();
    });
  });

  describe('with CONSOLE_ENABLED=false', () => {
    let gateway: RunningGateway;

    beforeAll(async () => {
      gateway = await startGateway({ CONSOLE_ENABLED: false });
    });
    afterAll(() => gateway.close());

    it.each(['/', '/console', '/console/app.js', '/console/sdk/index.js'])('answers %s with 404', async (path) => {
      const response = await fetch(gateway.http(path));
      expect(response.status).toBe(404);
      expect(await response.json()).toEqual({
        error: { code: 'NOT_FOUND', message: 'The web console is turned off on this gateway (CONSOLE_ENABLED=false)' },
      });
    });

    it('still serves the LLM gateway at / and the catalogue at /tools', async () => {
      const socket = await TestSocket.open(gateway.ws('/'));
      expect(await socket.next()).toMatchObject({ type: 'status', status: 'connected' });
      await socket.close();
      expect((await fetch(gateway.http('/tools'))).status).toBe(200);
    });
  });
});
