import { mkdtempSync, readFileSync, rmSync, statSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { freePort } from '../support/ports';
import { listeningPort, MainProcess, startMain } from '../support/main-process';

/** The gateway's process with its two streams apart, to tell what goes where. */
function startWatched(env: Record<string, string>): MainProcess & { stdout(): string; stderr(): string } {
  const main = startMain(env);
  let stdout = '';
  let stderr = '';
  main.child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  main.child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return { ...main, stdout: () => stdout, stderr: () => stderr };
}

async function stop(main: MainProcess): Promise<void> {
  if (main.child.exitCode !== null) return;
  main.child.kill('SIGTERM');
  expect(await main.exited).toBe(0);
}

async function waitFor(condition: () => boolean, what: () => string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`Timed out; output so far:\n${what()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const records = (text: string) =>
  text
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line));
const TOKEN_LINE = /generated for this run: ([A-Za-z0-9_-]{32})/;

/** An MCP `initialize` over Streamable HTTP: 200 with a token MCP accepts, 401/403 otherwise. */
async function mcpStatus(port: number, token: string): Promise<number> {
  const response = await fetch(`http://127.0.0.1:${port}/mcp`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'startup-test', version: '1' } },
    }),
  });
  await response.body?.cancel();
  return response.status;
}

/** What the built gateway (`node dist/main.js`) says when it starts, read as an operator reads it. */
describe('the gateway at start-up', () => {
  const noTokens = { AUTH_TOKENS: '', MCP_WS_AUTH_TOKEN: '', MCP_WS_AUTH_TOKEN_FILE: '' };

  it("prints a short summary, leaves Nest's route mapping out, redacts credentials and shows the generated MCP token once on stderr", async () => {
    const main = startWatched({
      ...noTokens,
      LLM_BASE_URL: 'http://modeluser:model-password@127.0.0.1:9/v1/',
      LLM_MODEL: 'qwen3:8b',
      CLOUD_LOG_LEVEL: 'INFO',
    });
    try {
      const port = await listeningPort(main.output);
      const out = records(main.stdout());
      const messages = out.map((record) => record.message);
      expect(out.filter((record) => ['RoutesResolver', 'RouterExplorer', 'WebSocketsController', 'InstanceLoader'].includes(record.context))).toEqual([]);
      expect(main.output()).not.toMatch(/subscribed to|Mapped \{/);
      expect(messages).toEqual(
        expect.arrayContaining([
          `Listening on 127.0.0.1:${port}`,
          `Web console: http://127.0.0.1:${port}/`,
          `LLM gateway: ws://127.0.0.1:${port}/ (and ws://127.0.0.1:${port}/llm)`,
          `MCP: http://127.0.0.1:${port}/mcp (Streamable HTTP) and ws://127.0.0.1:${port}/mcp (WebSocket)`,
          'Model: qwen3:8b at http://***:***@127.0.0.1:9/v1/',
          expect.stringMatching(/^Auth: off .*MCP always needs a token: a token generated for this run, shown once on stderr$/),
          'Sessions: in memory (lost on restart; REDIS_URL to share and keep them)',
        ]),
      );
      expect(out.length).toBeLessThanOrEqual(16);
      expect(main.output()).not.toContain('model-password');

      const tokens = [...main.stderr().matchAll(new RegExp(TOKEN_LINE, 'g'))].map((match) => match[1]);
      expect(tokens).toHaveLength(1);
      expect(main.stdout()).not.toContain(tokens[0]);
      expect(await mcpStatus(port, tokens[0])).toBe(200);
      expect(await mcpStatus(port, 'not-the-token')).toBe(403);
    } finally {
      await stop(main);
    }
  }, 30_000);

  it('shows the generated MCP token even at CLOUD_LOG_LEVEL=ERROR, and nothing else', async () => {
    const port = await freePort();
    const main = startWatched({ ...noTokens, CLOUD_PORT: String(port), CLOUD_LOG_LEVEL: 'ERROR' });
    try {
      await waitFor(() => TOKEN_LINE.test(main.stderr()), main.output);
      const [token] = TOKEN_LINE.exec(main.stderr())!.slice(1);
      // Nothing says when it listens at this level: the port answers once it does.
      let status = 0;
      for (let attempt = 0; attempt < 100 && status === 0; attempt++) {
        status = await mcpStatus(port, token).catch(() => new Promise<number>((resolve) => setTimeout(() => resolve(0), 100)));
      }
      expect(status).toBe(200);
      expect(main.stdout()).toBe('');
      expect(records(main.stderr())).toEqual([expect.objectContaining({ level: 'warn', context: 'MCP', message: expect.stringContaining(token) })]);
    } finally {
      await stop(main);
    }
  }, 30_000);

  it('writes the generated MCP token to MCP_WS_AUTH_TOKEN_FILE instead, and never prints it', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'gateway-token-'));
    const file = join(directory, 'mcp-token');
    const main = startWatched({ ...noTokens, MCP_WS_AUTH_TOKEN_FILE: file, CLOUD_LOG_LEVEL: 'INFO' });
    try {
      const port = await listeningPort(main.output);
      const token = readFileSync(file, 'utf8').trim();
      expect(token).toMatch(/^[A-Za-z0-9_-]{32}$/);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(main.output()).not.toContain(token);
      expect(main.output()).toContain(`MCP always needs a token: a token generated for this run, in ${file}`);
      expect(await mcpStatus(port, token)).toBe(200);
    } finally {
      await stop(main);
      rmSync(directory, { recursive: true, force: true });
    }
  }, 30_000);

  it('refuses to start when that file cannot be written, saying why', async () => {
    const main = startWatched({ ...noTokens, MCP_WS_AUTH_TOKEN_FILE: '/nonexistent-folder/mcp-token' });
    expect(await main.exited).toBe(1);
    expect(main.stderr()).toContain(
      'Gateway failed to start: Cannot write the generated MCP token to /nonexistent-folder/mcp-token (MCP_WS_AUTH_TOKEN_FILE): ENOENT',
    );
  }, 30_000);

  it("logs Nest's route mapping at CLOUD_LOG_LEVEL=DEBUG", async () => {
    const main = startWatched({ ...noTokens, CLOUD_LOG_LEVEL: 'DEBUG' });
    try {
      await listeningPort(main.output);
      const mapped = records(main.stdout()).filter((record) => record.context === 'RouterExplorer');
      expect(mapped.length).toBeGreaterThan(5);
      expect(mapped.every((record) => record.level === 'debug')).toBe(true);
    } finally {
      await stop(main);
    }
  }, 30_000);
});
