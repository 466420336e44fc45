import { execFile } from 'child_process';
import { request as httpRequest } from 'http';
import { join } from 'path';
import { RunningGateway, startGateway } from '../support/gateway';
import { PROJECT_ROOT } from '../support/built';
import { TestSocket, UpgradeRefused } from '../support/test-socket';

const TOKEN = 'origin-token';
const CONSOLE_ELSEWHERE = 'https://console.example.com';
const EVIL = 'http://evil.example';

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** A raw HTTP request, so that `Host` and `Origin` can be anything a browser or an attacker sends. */
function send(port: number, method: string, path: string, headers: Record<string, string>, body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, method, path, headers }, (response) => {
      let text = '';
      response.on('data', (chunk: Buffer) => (text += chunk.toString()));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function refusal(open: Promise<TestSocket>): Promise<UpgradeRefused> {
  const error = await open.then(
    (socket) => {
      socket.close();
      return undefined;
    },
    (failure: unknown) => failure,
  );
  if (!(error instanceof UpgradeRefused)) throw new Error(`Expected a refused upgrade, got ${String(error)}`);
  return error;
}

/** Runs one scenario of the MCP conformance suite (the real `@modelcontextprotocol/conformance` CLI). */
function conformance(url: string, scenario: string): Promise<string> {
  const cli = join(PROJECT_ROOT, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js');
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [cli, 'server', '--url', url, '--scenario', scenario],
      { timeout: 60_000, env: { ...process.env, NO_COLOR: '1' } },
      (error, stdout, stderr) => {
        if (error && error.killed) reject(new Error(`conformance ${scenario} timed out`));
        else resolve(`${stdout}${stderr}`);
      },
    );
  });
}

describe('Origin and Host checks (DNS rebinding, cross-site WebSocket hijacking)', () => {
  let gateway: RunningGateway;
  const own = () => `http://127.0.0.1:${gateway.port}`;

  beforeAll(async () => {
    gateway = await startGateway({ AUTH_TOKENS: TOKEN, MCP_WS_AUTH_TOKEN: TOKEN, MCP_WS_MAX_CONNECTIONS: 10, ALLOWED_ORIGINS: CONSOLE_ELSEWHERE });
  });
  afterAll(() => gateway.close());

  describe('HTTP', () => {
    const auth = { Authorization: `Bearer ${TOKEN}` };

    it("serves requests without Origin (devices, agents) and from the gateway's own pages", async () => {
      expect((await send(gateway.port, 'GET', '/tools', auth)).status).toBe(200);
      const own_ = await send(gateway.port, 'GET', '/tools', { ...auth, Origin: own() });
      expect(own_.status).toBe(200);
      expect(own_.headers['access-control-allow-origin']).toBeUndefined();
    });

    it("refuses a page of another site with 403 in the route's own error format", async () => {
      const tools = await send(gateway.port, 'GET', '/tools', { ...auth, Origin: EVIL });
      expect(tools.status).toBe(403);
      expect(JSON.parse(tools.body)).toEqual({ error: { code: 'FORBIDDEN', message: `Origin "${EVIL}" is not allowed (add it to ALLOWED_ORIGINS)` } });
      const mcp = await send(
        gateway.port,
        'POST',
        '/mcp',
        { ...auth, Origin: EVIL, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
        JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
      );
      expect(mcp.status).toBe(403);
      expect(JSON.parse(mcp.body)).toMatchObject({ jsonrpc: '2.0', error: { message: expect.stringContaining('Origin') }, id: null });
      expect((await send(gateway.port, 'GET', '/tools', { ...auth, Origin: 'null' })).status).toBe(403);
    });

    it('refuses a Host that is not this machine while listening on loopback (a rebound DNS name)', async () => {
      const rebound = await send(gateway.port, 'GET', '/tools', {
        ...auth,
        Host: `evil.example:${gateway.port}`,
        Origin: `http://evil.example:${gateway.port}`,
      });
      expect(rebound.status).toBe(403);
      expect(JSON.parse(rebound.body).error.message).toContain('Host "evil.example');
      for (const host of [`localhost:${gateway.port}`, `127.0.0.1:${gateway.port}`, `[::1]:${gateway.port}`]) {
        expect((await send(gateway.port, 'GET', '/health', { Host: host })).status).toBe(200);
      }
    });

    it('answers CORS for a page of ALLOWED_ORIGINS, preflight included, and for no other', async () => {
      const preflight = await send(gateway.port, 'OPTIONS', '/tools', {
        Origin: CONSOLE_ELSEWHERE,
        'Access-Control-Request-Method': 'GET',
        'Access-Control-Request-Headers': 'authorization',
      });
      expect(preflight.status).toBe(204);
      expect(preflight.headers).toMatchObject({
        'access-control-allow-origin': CONSOLE_ELSEWHERE,
        'access-control-allow-methods': expect.stringContaining('POST'),
        'access-control-allow-headers': expect.stringContaining('Authorization'),
      });
      const tools = await send(gateway.port, 'GET', '/tools', { ...auth, Origin: CONSOLE_ELSEWHERE });
      expect(tools.status).toBe(200);
      expect(tools.headers['access-control-allow-origin']).toBe(CONSOLE_ELSEWHERE);
      expect(tools.headers['access-control-expose-headers']).toContain('Mcp-Session-Id');
      expect(tools.headers.vary).toContain('Origin');
      const refused = await send(gateway.port, 'OPTIONS', '/tools', { Origin: EVIL, 'Access-Control-Request-Method': 'GET' });
      expect(refused.status).toBe(403);
      expect(refused.headers['access-control-allow-origin']).toBeUndefined();
    });
  });

  describe('WebSocket upgrades, on every protocol', () => {
    const routes: [string, Record<string, string>][] = [
      ['/', { Authorization: `Bearer ${TOKEN}` }],
      ['/litemcp/calculator', { Authorization: `Bearer ${TOKEN}` }],
      ['/mcp', {}],
      ['/utcp', {}],
    ];

    it.each(routes)('%s refuses a page of another site and a rebound Host with 403, and accepts localhost pages', async (path, headers) => {
      const foreign = await refusal(TestSocket.open(gateway.ws(path), { headers: { ...headers, Origin: EVIL } }));
      expect(foreign.status).toBe(403);
      expect(foreign.body).toContain('Origin');
      const rebound = await refusal(TestSocket.open(gateway.ws(path), { headers: { ...headers, Host: 'evil.example' } }));
      expect(rebound.status).toBe(403);
      expect(rebound.body).toContain('Host');
      const local = await TestSocket.open(gateway.ws(path), { headers: { ...headers, Origin: 'http://localhost:5173' } });
      local.close();
      const allowed = await TestSocket.open(gateway.ws(path), { headers: { ...headers, Origin: CONSOLE_ELSEWHERE } });
      allowed.close();
    });
  });

  describe("the MCP conformance suite's transport scenarios, with a token in the URL", () => {
    it.each(['server-initialize', 'ping', 'tools-list', 'server-sse-multiple-streams', 'dns-rebinding-protection'])(
      '%s passes',
      async (scenario) => {
        const output = await conformance(`http://127.0.0.1:${gateway.port}/mcp?token=${TOKEN}`, scenario);
        expect(output).toMatch(/Passed: (\d+)\/\1, 0 failed/);
      },
      90_000,
    );
  });
});
