import { mkdtempSync, rmSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { PROJECT_ROOT } from './built';
import type { RunningGateway } from './gateway';

/** The registry's reference MCP server (a dev dependency), started over stdio with this Node. */
export const EVERYTHING_SERVER = {
  command: process.execPath,
  args: [join(PROJECT_ROOT, 'node_modules', '@modelcontextprotocol', 'server-everything', 'dist', 'index.js'), 'stdio'],
};

/** Writes `{"mcpServers": servers}` to a fresh temporary file; `remove()` deletes its folder. */
export function serversFile(servers: Record<string, unknown>): { path: string; remove(): void } {
  const folder = mkdtempSync(join(tmpdir(), 'mcp-servers-'));
  const path = join(folder, 'mcp.json');
  writeFileSync(path, JSON.stringify({ mcpServers: servers }, null, 2));
  return { path, remove: () => rmSync(folder, { recursive: true, force: true }) };
}

/** One upstream as `/health` reports it. */
export async function upstreamStatus(gateway: RunningGateway, name: string): Promise<any> {
  const health: any = await (await fetch(gateway.http('/health'))).json();
  return health.details.mcp_upstreams?.servers[name];
}

/** Polls `condition` every 50 ms until it holds; fails after `timeoutMs`. */
export async function until(condition: () => boolean | Promise<boolean>, timeoutMs = 20_000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Waits until `/health` shows upstream `name` in `state`; returns its status. */
export async function upstreamIn(gateway: RunningGateway, name: string, state: string, timeoutMs = 20_000): Promise<any> {
  let status: any;
  await until(async () => (status = await upstreamStatus(gateway, name))?.state === state, timeoutMs, `${name} to be ${state}`);
  return status;
}

/** Whether a process of that id still runs. */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
