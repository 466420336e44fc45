import { listeningPort, startMain } from '../support/main-process';
import { TestSocket } from '../support/test-socket';

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
    expect(lines.map((line) => JSON.parse(line).message)).toEqual(expect.arrayContaining(['SIGTERM received: closing connections', 'Stopped']));
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
    // The operator's mistake, told once in plain words: no stack trace of ours or Nest's.
    expect(main.output()).not.toMatch(/\n\s+at |ExceptionHandler/);
    expect(main.output().match(/Invalid configuration/g)).toHaveLength(1);
  }, 30000);
});
