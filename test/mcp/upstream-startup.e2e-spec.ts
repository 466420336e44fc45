import { writeFileSync } from 'fs';
import { InvalidConfigurationError } from '../../src/config/environment';
import { ToolRegistryService } from '../../src/core/tools/tool-registry.service';
import { RunningGateway, startGateway } from '../support/gateway';
import { HttpUpstream, text } from '../support/http-upstream';
import { listeningPort, startMain } from '../support/main-process';
import { freePort } from '../support/ports';
import { EVERYTHING_SERVER, isRunning, serversFile, until, upstreamIn, upstreamStatus } from '../support/upstreams';

const TOKEN = 'legacy-token-81c3e0';

/** Calls a catalogue tool in process, with no arguments. */
const callTool = (gateway: RunningGateway, name: string) => {
  const registry = gateway.app.get(ToolRegistryService);
  return Promise.resolve(registry.run(registry.prepare(name, {})));
};

describe('upstreams that are slow, dead or old', () => {
  let legacy: HttpUpstream;
  let file: { path: string; remove(): void };
  let gateway: RunningGateway;

  beforeAll(async () => {
    legacy = await HttpUpstream.start(TOKEN, [
      { tool: { name: 'ping', description: 'Answers pong', inputSchema: { type: 'object' } }, run: () => text('pong') },
      { tool: { name: 'hang', description: 'Never answers', inputSchema: { type: 'object' } }, run: () => new Promise(() => undefined) },
      { tool: { name: 'calculator', description: 'Clashes without a prefix', inputSchema: { type: 'object' } }, run: () => text('0') },
      {
        tool: { name: 'broken', description: 'Has no valid schema', inputSchema: { type: 'object', properties: { a: { type: 'nonsense' } } } },
        run: () => text('never'),
      },
    ]);
    file = serversFile({
      silent: { command: process.execPath, args: ['-e', 'setInterval(() => {}, 1000)'], connectTimeout: 120 },
      mute: { command: process.execPath, args: ['-e', 'setInterval(() => {}, 1000)'], connectTimeout: 0.3 },
      missing: { command: 'no-such-mcp-server-anywhere' },
      refused: { url: `http://127.0.0.1:${await freePort()}/mcp` },
      legacy: { url: legacy.url('/sse'), headers: { Authorization: `Bearer ${TOKEN}` }, callTimeout: 0.5 },
      bare: { type: 'sse', url: legacy.url('/sse'), headers: { Authorization: `Bearer ${TOKEN}` }, prefix: '' },
      everything: EVERYTHING_SERVER,
      parked: { ...EVERYTHING_SERVER, disabled: true },
    });
    // Retries far apart, so the failed ones are still waiting when they are looked at.
    gateway = await startGateway({ MCP_SERVERS_FILE: file.path, MCP_UPSTREAM_RETRY_MIN: 60, MCP_UPSTREAM_RETRY_MAX: 120 });
  });

  afterAll(async () => {
    await gateway?.close();
    await legacy?.kill();
    file?.remove();
  });

  it('starts without waiting for any of them, and connects the good ones beside the bad', async () => {
    // startGateway has resolved while "silent" is still in its 120 s connect timeout.
    expect(await upstreamStatus(gateway, 'silent')).toMatchObject({ state: 'connecting', pid: expect.any(Number), tools: 0 });
    await upstreamIn(gateway, 'everything', 'connected');
    expect(await upstreamStatus(gateway, 'silent')).toMatchObject({ state: 'connecting' });
    expect(gateway.app.get(ToolRegistryService).get('everything.echo')).toBeDefined();
  });

  it('reports each one on /health: the error, the next attempt, and a disabled one as such', async () => {
    const missing = await upstreamIn(gateway, 'missing', 'failed');
    expect(missing).toMatchObject({
      transport: 'stdio',
      failures: 1,
      last_error: expect.stringMatching(/^could not connect: spawn no-such-mcp-server-anywhere ENOENT/),
    });
    expect(Date.parse(missing.next_retry_at)).toBeGreaterThan(Date.now());
    expect(await upstreamIn(gateway, 'refused', 'failed')).toMatchObject({
      transport: 'streamable-http',
      last_error: expect.stringMatching(/^could not connect: fetch failed \(ECONNREFUSED\)/),
    });
    expect(await upstreamIn(gateway, 'mute', 'failed')).toMatchObject({ last_error: 'could not connect: Request timed out' });
    expect(await upstreamStatus(gateway, 'parked')).toMatchObject({ state: 'disabled', tools: 0 });

    const response = await fetch(gateway.http('/health'));
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ status: 'ok', info: { mcp_upstreams: { status: 'up' } } });
  });

  it('falls back to SSE for a server that refuses Streamable HTTP, sending its headers', async () => {
    expect(await upstreamIn(gateway, 'legacy', 'connected')).toMatchObject({ transport: 'sse', tools: 3 });
    await expect(callTool(gateway, 'legacy.ping')).resolves.toMatchObject({ ok: true, value: 'pong' });
  });

  it('leaves out the tools the catalogue refuses, and says why on /health', async () => {
    const bare = await upstreamIn(gateway, 'bare', 'connected');
    expect(bare).toMatchObject({ tools: 2 });
    expect(bare.skipped_tools).toEqual([
      { tool: 'calculator', reason: 'Tool name already exists: "calculator"' },
      { tool: 'broken', reason: expect.stringMatching(/^Tool "broken": Invalid JSON Schema/) },
    ]);
    const registry = gateway.app.get(ToolRegistryService);
    expect(registry.get('calculator')?.source).toBe('module');
    expect(registry.get('ping')?.source).toBe('mcp:bare');
  });

  it("ends a call at the server's own time limit, and the server stays connected", async () => {
    await upstreamIn(gateway, 'legacy', 'connected');
    await expect(callTool(gateway, 'legacy.hang')).resolves.toMatchObject({
      ok: false,
      code: 'TOOL_TIMEOUT',
      message: 'Tool "legacy.hang" did not finish within 0.5 s',
    });
    expect(await upstreamStatus(gateway, 'legacy')).toMatchObject({ state: 'connected', calls_in_flight: 0 });
  });

  it('ends every child process when the gateway closes, even one still connecting', async () => {
    const pids = [(await upstreamStatus(gateway, 'silent')).pid, (await upstreamIn(gateway, 'everything', 'connected')).pid];
    expect(pids).toEqual([expect.any(Number), expect.any(Number)]);
    expect(pids.every(isRunning)).toBe(true);
    await gateway.close();
    expect(pids.some(isRunning)).toBe(false);
  });
});

describe('a bad MCP_SERVERS_FILE', () => {
  const boot = (path: string) => startGateway({ MCP_SERVERS_FILE: path });

  it('stops the boot, naming the file and every bad entry', async () => {
    const file = serversFile({
      ftp: { url: 'ftp://files.example.com/mcp' },
      both: { command: 'node', url: 'http://127.0.0.1:1/mcp' },
      empty: {},
      wrongType: { type: 'sse', command: 'node' },
      badArgs: { command: 'node', args: 'server.js', env: { PORT: 3000 } },
      badPrefix: { command: 'node', prefix: '9.' },
      fine: { command: 'node' },
    });
    const failure = await boot(file.path).catch((error: unknown) => error);
    file.remove();
    expect(failure).toBeInstanceOf(InvalidConfigurationError);
    const { problems } = failure as InvalidConfigurationError;
    expect(problems).toEqual([
      `MCP_SERVERS_FILE ${file.path}: server "ftp": url must be an http(s) URL`,
      `MCP_SERVERS_FILE ${file.path}: server "both": give either command (a local server) or url (a remote one), not both`,
      `MCP_SERVERS_FILE ${file.path}: server "empty": needs command (a local server) or url (a remote one)`,
      `MCP_SERVERS_FILE ${file.path}: server "wrongType": type "sse" needs url, not command`,
      `MCP_SERVERS_FILE ${file.path}: server "badArgs": args must be an array; env must be an object of strings`,
      `MCP_SERVERS_FILE ${file.path}: server "badPrefix": prefix "9." must start with a letter or "_" and contain only letters, digits, "_" and single dots`,
    ]);
  });

  it('stops the boot when it cannot be read or is not JSON', async () => {
    await expect(boot('/nonexistent/mcp.json')).rejects.toThrow(/MCP_SERVERS_FILE \/nonexistent\/mcp.json cannot be read: ENOENT/);
    const file = serversFile({});
    writeFileSync(file.path, '{"mcpServers": {');
    await expect(boot(file.path)).rejects.toThrow(/is not valid JSON/);
    writeFileSync(file.path, '{"servers": {}}');
    await expect(boot(file.path)).rejects.toThrow(/must be a JSON object with an "mcpServers" object/);
    file.remove();
  });

  it('is not read at all with MCP_ENABLED=false: MCP is off as a whole, upstreams included', async () => {
    const gateway = await startGateway({ MCP_SERVERS_FILE: '/nonexistent/mcp.json', MCP_ENABLED: false });
    const health: any = await (await fetch(gateway.http('/health'))).json();
    expect(health.details.mcp_upstreams).toBeUndefined();
    await gateway.close();
  });
});

describe('the gateway process with upstreams', () => {
  it('exits with the file and entry named when the file is bad', async () => {
    const file = serversFile({ broken: { url: 'not a url' } });
    const main = startMain({ MCP_SERVERS_FILE: file.path });
    expect(await main.exited).toBe(1);
    file.remove();
    expect(main.output()).toContain(`MCP_SERVERS_FILE ${file.path}: server "broken": url must be an http(s) URL`);
  }, 30_000);

  it('logs when an upstream connects, and leaves no child behind after SIGTERM', async () => {
    const file = serversFile({ everything: EVERYTHING_SERVER });
    const main = startMain({ MCP_SERVERS_FILE: file.path });
    const port = await listeningPort(main.output);
    let pid = 0;
    await until(async () => {
      const health: any = await (await fetch(`http://127.0.0.1:${port}/health`)).json();
      pid = health.details.mcp_upstreams.servers.everything.pid ?? 0;
      return health.details.mcp_upstreams.servers.everything.state === 'connected';
    });
    expect(main.output()).toMatch(/MCP server \\"everything\\" connected \(stdio, \d+ tools\)/);
    main.child.kill('SIGTERM');
    expect(await main.exited).toBe(0);
    file.remove();
    expect(isRunning(pid)).toBe(false);
  }, 30_000);
});
