import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { createInterface } from 'readline';
import type { Readable } from 'stream';
import type { UpstreamServerConfig, UpstreamTransport } from './upstream-servers.config';

/** An SDK client transport to one upstream, and the child's pid while a stdio one runs. */
export interface UpstreamLink {
  kind: UpstreamTransport;
  transport: Transport;
  pid(): number | undefined;
}

/**
 * The SDK transport for `server`. A stdio child gets the SDK's safe default environment plus
 * the entry's `env`, and its stderr is piped, never inherited, so it cannot break the
 * gateway's JSON logs: each line goes to `onStderrLine`.
 */
export function openLink(server: UpstreamServerConfig, kind: UpstreamTransport, onStderrLine: (line: string) => void): UpstreamLink {
  if (server.transport === 'stdio') {
    const transport = new StdioClientTransport({ command: server.command, args: server.args, env: server.env, cwd: server.cwd, stderr: 'pipe' });
    createInterface({ input: transport.stderr as Readable }).on('line', onStderrLine);
    return { kind, transport, pid: () => transport.pid ?? undefined };
  }
  const requestInit = { headers: server.headers };
  const transport =
    kind === 'sse'
      ? new SSEClientTransport(server.url, { requestInit })
      : new StreamableHTTPClientTransport(server.url, { requestInit });
  return { kind, transport, pid: () => undefined };
}

/**
 * Whether a failed Streamable HTTP `initialize` means "try SSE": the MCP spec's
 * backwards-compatibility rule is a 4xx answer (an SSE-only server has no POST endpoint there),
 * except 401 and 403, which say the credentials are wrong, not the transport.
 */
export function refusesStreamableHttp(error: unknown): boolean {
  if (!(error instanceof StreamableHTTPError) || typeof error.code !== 'number') return false;
  return error.code >= 400 && error.code < 500 && error.code !== 401 && error.code !== 403;
}
