import { ChildProcessWithoutNullStreams, spawn, spawnSync } from 'child_process';
import { join } from 'path';
import { createInterface } from 'readline';
import { DEBIAN_PYTHON } from './spec-python-client';

/**
 * A real speech recognizer for the tests: pocketsphinx-transcription-server.py, an
 * OpenAI-compatible `/v1/audio/transcriptions` in Debian's Python (where python3-pocketsphinx
 * installs, or a `python3` on the PATH that has the module), restricted to home-commands.gram.
 * Takes 16 kHz mono WAVs.
 */
export class PocketsphinxServer {
  private constructor(
    private readonly child: ChildProcessWithoutNullStreams,
    readonly baseUrl: string,
  ) {}

  static async start(): Promise<PocketsphinxServer> {
    const script = join(__dirname, 'pocketsphinx-transcription-server.py');
    const python = ['python3', DEBIAN_PYTHON].find(importsPocketsphinx) ?? DEBIAN_PYTHON;
    const child = spawn(python, [script, '--grammar', join(__dirname, 'home-commands.gram')], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const port = await new Promise<string>((resolve, reject) => {
      createInterface({ input: child.stdout }).once('line', resolve);
      child.once('exit', (code) =>
        reject(new Error(`The pocketsphinx server exited (${code}): ${stderr}\nIt needs apt-get install python3-pocketsphinx pocketsphinx-en-us`)),
      );
    });
    return new PocketsphinxServer(child, `http://127.0.0.1:${port}/v1/`);
  }

  async close(): Promise<void> {
    if (this.child.exitCode !== null) return;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.kill();
    await exited;
  }
}

function importsPocketsphinx(python: string): boolean {
  return spawnSync(python, ['-c', 'import pocketsphinx'], { stdio: 'ignore', timeout: 10_000 }).status === 0;
}
