import { spawn } from 'child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';

/** One check of a scenario, as the conformance CLI writes it to checks.json. */
export interface Check {
  id: string;
  status: 'SUCCESS' | 'FAILURE' | 'WARNING' | 'INFO' | string;
  errorMessage?: string;
}

export interface Outcome {
  passed: boolean;
  failures: Check[];
  warnings: Check[];
}

/** How the conformance CLI is run: node's arguments that start it (a loader, the CLI's path), its `server` options after `--url`, and a kill timeout. */
export interface ConformanceCli {
  node: string[];
  serverOptions: string[];
  timeoutMs: number;
}

/** Runs one server scenario against `url` in a child process, killed after `cli.timeoutMs`; reads the checks.json it writes. */
export async function runScenario(cli: ConformanceCli, url: string, scenario: string): Promise<Outcome> {
  const output = mkdtempSync(join(tmpdir(), 'mcp-conformance-'));
  try {
    const args = [...cli.node, 'server', '--url', url, '--scenario', scenario, ...cli.serverOptions, '-o', output];
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let log = '';
    child.stdout.on('data', (chunk) => (log += chunk));
    child.stderr.on('data', (chunk) => (log += chunk));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, cli.timeoutMs);
    await new Promise((resolve) => child.on('close', resolve));
    clearTimeout(timer);

    const folder = readdirSync(output).find((name) => name.startsWith(`server-${scenario}-`));
    const file = folder && join(output, folder, 'checks.json');
    if (!file || !existsSync(file)) {
      const reason = timedOut ? `timed out after ${cli.timeoutMs / 1000} s` : `no checks.json: ${log.trim().split('\n').slice(-3).join(' ')}`;
      return { passed: false, failures: [{ id: timedOut ? '(timeout)' : '(no result)', status: 'FAILURE', errorMessage: reason }], warnings: [] };
    }
    const checks: Check[] = JSON.parse(readFileSync(file, 'utf8'));
    const failures = checks.filter((check) => check.status === 'FAILURE');
    // The CLI's own verdict: a scenario fails on a FAILURE check; WARNINGs (SHOULDs) do not fail it.
    return { passed: failures.length === 0, failures, warnings: checks.filter((check) => check.status === 'WARNING') };
  } finally {
    rmSync(output, { recursive: true, force: true });
  }
}

/** Runs every scenario against `url`, `parallel` at a time, into `outcomes`. */
export async function runAll(
  cli: ConformanceCli,
  url: string,
  scenarios: string[],
  parallel: number,
  outcomes = new Map<string, Outcome>(),
): Promise<Map<string, Outcome>> {
  const queue = [...scenarios];
  const worker = async () => {
    for (let scenario = queue.shift(); scenario !== undefined; scenario = queue.shift()) outcomes.set(scenario, await runScenario(cli, url, scenario));
  };
  await Promise.all(Array.from({ length: parallel }, worker));
  return outcomes;
}

export function describeOutcome(outcome: Outcome): string {
  if (outcome.passed) return outcome.warnings.length ? `pass (warnings: ${outcome.warnings.map((check) => check.id).join(', ')})` : 'pass';
  return `FAIL`;
}

export function failureDetails(outcome: Outcome): string {
  return outcome.failures.map((check) => `\`${check.id}\`: ${check.errorMessage ?? ''}`.replace(/\|/g, '\\|').replace(/\s+/g, ' ')).join('<br>');
}
