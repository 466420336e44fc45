import { ChildProcess, spawn } from 'child_process';
import { createServer, connect } from 'net';
import { join } from 'path';

/** The repository root, from the compiled file in dist-bench/bench/support. */
export const PROJECT_ROOT = join(__dirname, '..', '..', '..');
/** Where the compiled bench files live, for child processes started from them. */
export const BENCH_BUILD = join(__dirname, '..');

export interface ServerUsage {
  /** Resident set size after a full garbage collection, bytes. */
  rss: number;
  heapUsed: number;
  external: number;
  /** User + system CPU time since the process started, microseconds. */
  cpuMicros: number;
}

export interface ServerProcess {
  readonly name: string;
  readonly port: number;
  readonly pid: number;
  /** Memory and CPU of the server process, read inside it by the usage probe. */
  usage(): Promise<ServerUsage>;
  /** Sends `message` on the IPC channel; resolves with the first answer of the same `type`. */
  ask<T>(message: { type: string }): Promise<T>;
  stop(): Promise<void>;
}

export interface ServerSpec {
  name: string;
  /** Script and arguments after `node`. */
  args: string[];
  env?: Record<string, string>;
  /** Extra `--require` preloads, before the usage probe. */
  preload?: string[];
}

/** A port nobody listens on right now, on loopback. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * Starts a server as its own Node process, so its memory and CPU are its own: `node --expose-gc
 * --require usage-probe <args>` with `PORT` in its environment, ready once the port accepts.
 */
export async function startServer(spec: ServerSpec, port: number): Promise<ServerProcess> {
  const preloads = [...(spec.preload ?? []), join(BENCH_BUILD, 'support', 'usage-probe.js')];
  const child = spawn(process.execPath, ['--expose-gc', ...preloads.flatMap((file) => ['--require', file]), ...spec.args], {
    cwd: PROJECT_ROOT,
    env: { ...process.env, ...spec.env, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  let output = '';
  const keep = (chunk: Buffer) => (output = (output + chunk.toString()).slice(-20_000));
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let gone = false;
  void exited.then(() => (gone = true));

  const deadline = Date.now() + 20_000;
  while (!(await accepts(port))) {
    if (gone || Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`${spec.name} did not start on port ${port}:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    name: spec.name,
    port,
    pid: child.pid!,
    usage: () => ask<ServerUsage>(child, { type: 'usage' }),
    ask: (message) => ask(child, message),
    async stop() {
      if (gone) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });
}

let questions = 0;

/**
 * Sends `question` with an `id` of its own; resolves with the answer of its type that echoes
 * that id (or echoes none: the usage probe does not), so questions asked at once never take
 * each other's answers.
 */
function ask<T>(child: ChildProcess, question: { type: string }): Promise<T> {
  const id = ++questions;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`The server did not answer "${question.type}"`)), 10_000);
    const onMessage = (message: { type?: string; id?: number }) => {
      if (message?.type !== question.type || (message.id !== undefined && message.id !== id)) return;
      clearTimeout(timer);
      child.off('message', onMessage);
      resolve(message as T);
    };
    child.on('message', onMessage);
    child.send({ ...question, id });
  });
}
