import { ChildProcess, spawn } from 'child_process';
import { builtFile, PROJECT_ROOT } from './support/built';
import { TestSocket } from './support/test-socket';

/** `node dist/main.js` as a user starts it, with its logs collected. */
function startMain(env: Record<string, string>): { child: ChildProcess; output: () => string; exited: Promise<number | null> } {
  let output = '';
  const child = spawn(process.execPath, [builtFile('main.js')], {
    cwd: PROJECT_ROOT,
    env: { ...process.env, CLOUD_HOST: '127.0.0.1', CLOUD_PORT: '0', MCP_WS_PORT: '0', ...env },
  });
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

async function listeningPort(output: () => string, timeoutMs = 15000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const match = /Listening on [\d.]+:(\d+)/.exec(output());
    if (match) return Number(match[1]);
    if (Date.now() > deadline) throw new Error(`Gateway did not start:\n${output()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('the gateway process', () => {
  it('logs JSON, serves /health, and on SIGTERM closes sockets with 1001 and exits 0', async () => {
    const main = startMain({});
    const port = await listeningPort(main.output);
    const health = await fetch(`http://127.0.0.1:${port}/health`);
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({ status: 'ok' });

    const sockets = await Promise.all([1, 2].map(() => TestSocket.open(`ws://127.0.0.1:${port}/litemcp/calculator`)));
    main.child.kill('SIGTERM');
    for (const socket of sockets) expect(await socket.closed).toEqual({ code: 1001, reason: 'Server shutting down' });
    expect(await main.exited).toBe(0);

    const lines = main.output().trim().split('\n');
    for (const line of lines) expect(() => JSON.parse(line)).not.toThrow();
    expect(lines.map((line) => JSON.parse(line).message)).toEqual(
      expect.arrayContaining(['SIGTERM received: closing connections', 'Stopped']),
    );
  }, 30000);

  it('stops on SIGINT too, and logs as text when asked', async () => {
    const main = startMain({ CLOUD_LOG_FORMAT: 'text' });
    await listeningPort(main.output);
    main.child.kill('SIGINT');
    expect(await main.exited).toBe(0);
    expect(main.output()).toMatch(/LOG \[Shutdown\] SIGINT received/);
  }, 30000);

  it('refuses to start on an invalid setting, naming it', async () => {
    const main = startMain({ CLOUD_PORT: 'ninety-four hundred', LLM_TEMPERATURE: '3' });
    expect(await main.exited).toBe(1);
    expect(main.output()).toMatch(/Invalid configuration/);
    expect(main.output()).toMatch(/CLOUD_PORT must be an integer number/);
    expect(main.output()).toMatch(/LLM_TEMPERATURE must not be greater than 1/);
  }, 30000);
});
