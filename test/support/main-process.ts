import { ChildProcess, spawn } from 'child_process';
import { builtFile, PROJECT_ROOT } from './built';

export interface MainProcess {
  child: ChildProcess;
  /** Everything it wrote so far, stdout and stderr. */
  output(): string;
  exited: Promise<number | null>;
}

/** `node dist/main.js` as a user starts it, on loopback port 0 without the dedicated MCP listener unless `env` says otherwise. */
export function startMain(env: Record<string, string>): MainProcess {
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

/**
 * The port the process logs it listens on, once its whole startup summary has arrived: the
 * summary is written at once, but a pipe's reader can get it in several chunks, so a test that
 * checks a later line (`Auth:`) right after `Listening on` could miss it.
 */
export async function listeningPort(output: () => string, timeoutMs = 15000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const match = /Listening on [\d.]+:(\d+)[\s\S]*Sessions: /.exec(output());
    if (match) return Number(match[1]);
    if (Date.now() > deadline) throw new Error(`Gateway did not start:\n${output()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
