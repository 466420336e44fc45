import { spawn, spawnSync } from 'child_process';
import { join } from 'path';

/** Debian's interpreter, where `apt-get install python3-websockets` puts the package. */
export const DEBIAN_PYTHON = '/usr/bin/python3';

export const PYTHON_MISSING =
  "The spec's Python client needs python3 with the websockets package: apt-get install -y python3-websockets (or pip install websockets), or set PYTHON to an interpreter that has it.";

/**
 * The interpreter that runs the spec's Python client: `PYTHON` when set, else the first of
 * `python3` on the PATH and Debian's own that can import websockets. Debian's comes second
 * because a pyenv or venv `python3` first on the PATH does not see Debian's packages. With
 * none, a one-line error says what to install: the test fails, it never skips.
 */
export function findPython(env: NodeJS.ProcessEnv = process.env, hasWebsockets: (python: string) => boolean = importsWebsockets): string {
  const configured = env.PYTHON?.trim();
  if (configured) {
    if (hasWebsockets(configured)) return configured;
    throw new Error(`PYTHON is ${configured}, which cannot import websockets. ${PYTHON_MISSING}`);
  }
  const found = ['python3', DEBIAN_PYTHON].find(hasWebsockets);
  if (!found) throw new Error(PYTHON_MISSING);
  return found;
}

function importsWebsockets(python: string): boolean {
  return spawnSync(python, ['-c', 'import websockets'], { stdio: 'ignore', timeout: 10_000 }).status === 0;
}

export interface PythonRun {
  status: number | null;
  stdout: string[];
  stderr: string;
}

/** Runs a scenario of test/support/spec-python-client/run.py against `url`, at most 30 s. */
export function runSpecPythonClient(python: string, url: string, scenario: 'main' | 'session'): Promise<PythonRun> {
  const folder = join(__dirname, 'spec-python-client');
  return new Promise((resolve, reject) => {
    const child = spawn(python, [join(folder, 'run.py'), url, scenario], {
      cwd: folder,
      env: { ...process.env, PYTHONIOENCODING: 'utf-8', PYTHONUNBUFFERED: '1', PYTHONDONTWRITEBYTECODE: '1' },
      timeout: 30_000,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout: stdout.split('\n').filter(Boolean), stderr }));
  });
}
