import { ChildProcess, spawn } from 'child_process';
import { createConnection } from 'net';
import { freePort } from './ports';

/** Resolves true when something answers Redis' PING on `port` of 127.0.0.1. */
export function answersPing(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection(port, '127.0.0.1');
    socket.setTimeout(500);
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.once('data', (data) => {
      socket.destroy();
      resolve(data.toString().startsWith('+PONG'));
    });
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });
}

/**
 * A `redis-server` of a test's own, on a spare port of 127.0.0.1 and without persistence unless
 * `args` (more of its options) say otherwise, for what a test may not do to the Redis other tests
 * share: freeze it (SIGSTOP), thaw it, restart it empty, read its command counts, configure it.
 */
export class RedisServer {
  private constructor(
    readonly port: number,
    private readonly args: string[],
    private process: ChildProcess,
  ) {}

  static async start(args: string[] = []): Promise<RedisServer> {
    const port = await freePort();
    return new RedisServer(port, args, await RedisServer.spawn(port, args));
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Stops the process where it is: its sockets stay open and nothing on them is answered. */
  freeze(): void {
    this.process.kill('SIGSTOP');
  }

  thaw(): void {
    this.process.kill('SIGCONT');
  }

  /** Kills it and starts it again on the same port, with nothing in it: a restart without persistence. */
  async restartEmpty(): Promise<void> {
    await this.stop();
    this.process = await RedisServer.spawn(this.port, this.args);
  }

  async stop(): Promise<void> {
    const { process } = this;
    if (process.exitCode !== null || process.signalCode !== null) return;
    const exited = new Promise((resolve) => process.once('exit', resolve));
    process.kill('SIGKILL');
    await exited;
  }

  private static async spawn(port: number, args: string[]): Promise<ChildProcess> {
    const server = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', ...args], { stdio: 'ignore' });
    const failed = new Promise<never>((_, reject) => server.once('error', reject));
    for (let attempt = 0; attempt < 100; attempt += 1) {
      if (await Promise.race([answersPing(port), failed])) return server;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    server.kill('SIGKILL');
    throw new Error(`redis-server did not answer on port ${port}`);
  }
}
