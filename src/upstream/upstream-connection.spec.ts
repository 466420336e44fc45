import { Logger } from '@nestjs/common';
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { loadGatewayConfig } from '../config/gateway-config';
import { ContextCatalogueService } from '../core/context/context-catalogue.service';
import { ToolRegistryService } from '../core/tools/tool-registry.service';
import { UpstreamConnection } from './upstream-connection';
import { parseMcpServers } from './upstream-servers.config';

const RETRY_MIN_MS = 1_000;
const RETRY_MAX_MS = 8_000;
const PING_INTERVAL_MS = 30_000;
const CONNECT_TIMEOUT_MS = 5_000;

/**
 * A real MCP server over stdio, on the SDK's low-level `Server`: tools `echo` and `ignore_pings`,
 * which makes it hang on every later `ping` as a server stuck in its work would.
 */
const SERVER_SOURCE = `
const { Server } = require(${JSON.stringify(require.resolve('@modelcontextprotocol/sdk/server/index.js'))});
const { StdioServerTransport } = require(${JSON.stringify(require.resolve('@modelcontextprotocol/sdk/server/stdio.js'))});
const types = require(${JSON.stringify(require.resolve('@modelcontextprotocol/sdk/types.js'))});
const server = new Server({ name: 'fixture', version: '1.0.0' }, { capabilities: { tools: {} } });
const object = { type: 'object', properties: { text: { type: 'string' } } };
server.setRequestHandler(types.ListToolsRequestSchema, () => ({
  tools: [{ name: 'echo', inputSchema: object }, { name: 'ignore_pings', inputSchema: { type: 'object' } }],
}));
server.setRequestHandler(types.CallToolRequestSchema, ({ params }) => {
  if (params.name === 'ignore_pings') server.setRequestHandler(types.PingRequestSchema, () => new Promise(() => undefined));
  return { content: [{ type: 'text', text: String(params.arguments?.text ?? params.name) }] };
});
void server.connect(new StdioServerTransport());
`;

/** The connection's log, which is how it tells what it did; each wait resolves at the first line matching. */
class RecordingLogger extends Logger {
  readonly lines: string[] = [];
  private waiters: { pattern: RegExp; resolve: (line: string) => void }[] = [];

  override log(message: string): void {
    this.record(message);
  }

  override warn(message: string): void {
    this.record(message);
  }

  override debug(): void {}

  /** The next line matching `pattern` from now on. */
  next(pattern: RegExp): Promise<string> {
    return new Promise((resolve) => this.waiters.push({ pattern, resolve }));
  }

  private record(line: string): void {
    this.lines.push(line);
    const [matched, waiting] = [this.waiters.filter((w) => w.pattern.test(line)), this.waiters.filter((w) => !w.pattern.test(line))];
    this.waiters = waiting;
    matched.forEach((waiter) => waiter.resolve(line));
  }
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('UpstreamConnection', () => {
  let folder: string;
  let script: string;
  let registry: ToolRegistryService;
  let logger: RecordingLogger;
  let connection: UpstreamConnection | undefined;

  /** A connection to `node <args>` as server "spec", as `MCP_SERVERS_FILE` would describe it. */
  function connectionTo(args: string[], entry: Record<string, unknown> = {}): UpstreamConnection {
    const config = loadGatewayConfig({});
    const [server] = parseMcpServers(
      { mcpServers: { spec: { command: process.execPath, args, connectTimeout: CONNECT_TIMEOUT_MS / 1000, ...entry } } },
      config.mcp.upstream,
      'spec',
    );
    registry = new ToolRegistryService(config);
    connection = new UpstreamConnection(server, {
      registry,
      contextCatalogue: new ContextCatalogueService(),
      logger,
      clientInfo: { name: 'gateway-spec', version: '0' },
      pingIntervalMs: PING_INTERVAL_MS,
      retryMinMs: RETRY_MIN_MS,
      retryMaxMs: RETRY_MAX_MS,
      maxResultBytes: 1_000_000,
    });
    return connection;
  }

  beforeAll(() => {
    folder = mkdtempSync(join(tmpdir(), 'upstream-connection-'));
    script = join(folder, 'server.js');
    writeFileSync(script, SERVER_SOURCE);
  });
  afterAll(() => rmSync(folder, { recursive: true, force: true }));

  beforeEach(() => {
    // Child processes and pipes run on the real event loop; the connection's timers (backoff,
    // pings, request timeouts) run on fake time, moved on by the tests.
    jest.useFakeTimers({ doNotFake: ['nextTick', 'queueMicrotask', 'setImmediate', 'clearImmediate'] });
    logger = new RecordingLogger();
  });
  afterEach(async () => {
    await connection?.stop();
    connection = undefined;
    jest.useRealTimers();
    jest.restoreAllMocks();
  });

  it('connects in the background: its status says so and its tools join the catalogue under its prefix', async () => {
    const upstream = connectionTo([script]);
    const connected = logger.next(/connected/);
    upstream.start();
    expect(upstream.status()).toMatchObject({ state: 'connecting', transport: 'stdio', tools: 0, pid: expect.any(Number) });

    expect(await connected).toBe('MCP server "spec" connected (stdio, 2 tools)');
    expect(upstream.status()).toEqual({
      state: 'connected',
      transport: 'stdio',
      tools: 2,
      resources: 0,
      resource_templates: 0,
      prompts: 0,
      calls_in_flight: 0,
      pid: expect.any(Number),
      connected_since: new Date().toISOString(),
      failures: 0,
      reconnects: 0,
    });
    expect(registry.get('spec.echo')).toMatchObject({ source: 'mcp:spec' });
    expect(registry.get('spec.ignore_pings')).toBeDefined();
  });

  it('retries a server that cannot start, backing off, until it connects', async () => {
    jest.spyOn(Math, 'random').mockReturnValue(1);
    const later = join(folder, 'later.js');
    const upstream = connectionTo([later]);
    let failed = logger.next(/could not connect/);
    upstream.start();
    await failed;
    const first = upstream.status();
    // The last line the child wrote to stderr is kept (Node ends its error report with its version).
    expect(first).toMatchObject({
      state: 'failed',
      failures: 1,
      tools: 0,
      last_error: expect.stringMatching(/^could not connect: Connection closed; stderr: Node\.js v/),
    });
    // The first retry waits the least; each failure doubles the wait, up to the most.
    expect(Date.parse(first.next_retry_at!) - Date.now()).toBe(RETRY_MIN_MS);

    failed = logger.next(/could not connect/);
    jest.advanceTimersByTime(RETRY_MIN_MS);
    expect(upstream.status().state).toBe('reconnecting');
    await failed;
    expect(upstream.status()).toMatchObject({ state: 'failed', failures: 2 });
    expect(Date.parse(upstream.status().next_retry_at!) - Date.now()).toBe(2 * RETRY_MIN_MS);

    copyFileSync(script, later);
    const connected = logger.next(/connected \(/);
    jest.advanceTimersByTime(2 * RETRY_MIN_MS - 1);
    expect(upstream.status().state).toBe('failed');
    jest.advanceTimersByTime(1);
    expect(await connected).toBe('MCP server "spec" connected (stdio, 2 tools)');
    expect(upstream.status()).toMatchObject({ state: 'connected', failures: 0, tools: 2 });
    expect(upstream.status().last_error).toBeUndefined();
    expect(upstream.status().next_retry_at).toBeUndefined();
  });

  it('withdraws the tools of a server that goes away, and reconnects to a new process', async () => {
    const upstream = connectionTo([script]);
    const connected = logger.next(/connected/);
    upstream.start();
    await connected;
    const firstPid = upstream.status().pid!;

    const gone = logger.next(/went away/);
    process.kill(firstPid, 'SIGKILL');
    await gone;
    expect(upstream.status()).toMatchObject({
      state: 'failed',
      tools: 0,
      failures: 0,
      last_error: expect.stringMatching(/^went away: .*; 2 tools withdrawn$/),
    });
    expect(registry.get('spec.echo')).toBeUndefined();

    const back = logger.next(/is back/);
    jest.advanceTimersByTime(RETRY_MIN_MS);
    await back;
    expect(upstream.status()).toMatchObject({ state: 'connected', reconnects: 1, tools: 2 });
    expect(upstream.status().pid).not.toBe(firstPid);
    expect(registry.get('spec.echo')).toBeDefined();
  });

  it('pings a connected server: an answer keeps it, none within the connect timeout counts it gone', async () => {
    const upstream = connectionTo([script]);
    const connected = logger.next(/connected/);
    upstream.start();
    await connected;
    const client = upstream.connectedClient()!;

    jest.advanceTimersByTime(PING_INTERVAL_MS);
    // The server answers in order, so once the echo is back, the ping sent before it has been answered.
    await client.callTool({ name: 'echo', arguments: { text: 'after the ping' } });
    jest.advanceTimersByTime(CONNECT_TIMEOUT_MS);
    expect(upstream.status().state).toBe('connected');

    await client.callTool({ name: 'ignore_pings', arguments: {} });
    const gone = logger.next(/went away/);
    jest.advanceTimersByTime(PING_INTERVAL_MS);
    jest.advanceTimersByTime(CONNECT_TIMEOUT_MS);
    expect(await gone).toMatch(/^MCP server "spec" went away: .*Request timed out.*; 2 tools withdrawn; next attempt in 1\.0 s$/);
    expect(upstream.status()).toMatchObject({ state: 'failed', tools: 0 });
  });

  it('stops: its process ends and its client is gone', async () => {
    const upstream = connectionTo([script]);
    const connected = logger.next(/connected/);
    upstream.start();
    await connected;
    const pid = upstream.status().pid!;

    await upstream.stop();
    expect(isRunning(pid)).toBe(false);
    expect(upstream.connectedClient()).toBeUndefined();
  });

  it('stops retrying a server that cannot start', async () => {
    const upstream = connectionTo([join(folder, 'never.js')]);
    const failed = logger.next(/could not connect/);
    upstream.start();
    await failed;
    await upstream.stop();
    jest.advanceTimersByTime(RETRY_MAX_MS * 4);
    expect(upstream.status()).toMatchObject({ state: 'failed', failures: 1 });
  });

  it('leaves a disabled server alone', () => {
    const upstream = connectionTo([script], { disabled: true });
    upstream.start();
    expect(upstream.status()).toEqual({
      state: 'disabled',
      transport: 'stdio',
      tools: 0,
      resources: 0,
      resource_templates: 0,
      prompts: 0,
      calls_in_flight: 0,
      failures: 0,
      reconnects: 0,
    });
    expect(logger.lines).toEqual([]);
  });
});
