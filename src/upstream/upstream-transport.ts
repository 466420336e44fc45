import { ClientCredentialsProvider, SdkHttpError, SSEClientTransport, StreamableHTTPClientTransport, Transport } from '@modelcontextprotocol/client';
import { boundedFetch } from './bounded-fetch';
import { BoundedStdioClientTransport } from './bounded-stdio-transport';
import type { DroppedMessage } from './oversized-answer';
import type { UpstreamOAuthCredentials, UpstreamServerConfig, UpstreamTransport } from './upstream-servers.config';

/** An SDK client transport to one upstream, and the child's pid while a stdio one runs. */
export interface UpstreamLink {
  kind: UpstreamTransport;
  transport: Transport;
  pid(): number | undefined;
}

/** What a link reports besides messages. */
export interface LinkListeners {
  /** Each line a stdio child writes to stderr. */
  onStderrLine(line: string): void;
  /** A message over `maxMessageBytes` was dropped. */
  onDropped(message: DroppedMessage): void;
}

/**
 * The SDK client transport for `server`, holding at most `maxMessageBytes` of any one message
 * from it. A stdio child gets the SDK's safe default environment plus the entry's `env`, and
 * its stderr is piped, never inherited, so it cannot break the gateway's JSON logs. A remote one
 * with `oauth` gets the SDK's client-credentials provider: the SDK finds the authorization server
 * from the upstream's 401 and fetches a token, and fetches a new one whenever a request is refused.
 */
export function openLink(server: UpstreamServerConfig, kind: UpstreamTransport, maxMessageBytes: number, listeners: LinkListeners): UpstreamLink {
  if (server.transport === 'stdio') {
    const { command, args, env, cwd } = server;
    const transport = new BoundedStdioClientTransport({ command, args, env, cwd, maxMessageBytes, ...listeners });
    return { kind, transport, pid: () => transport.pid };
  }
  const options = {
    requestInit: { headers: server.headers },
    fetch: boundedFetch(maxMessageBytes, listeners.onDropped),
    authProvider: server.oauth && clientCredentials(server.oauth),
  };
  const transport = kind === 'sse' ? new SSEClientTransport(server.url, options) : new StreamableHTTPClientTransport(server.url, options);
  return { kind, transport, pid: () => undefined };
}

function clientCredentials({ issuer, clientId, clientSecret, scope }: UpstreamOAuthCredentials): ClientCredentialsProvider {
  return new ClientCredentialsProvider({ clientId, clientSecret, scope, expectedIssuer: issuer });
}

/**
 * Whether a failed Streamable HTTP `initialize` means "try SSE": the MCP spec's
 * backwards-compatibility rule is a 4xx answer (an SSE-only server has no POST endpoint there),
 * except 401 and 403, which say the credentials are wrong, not the transport.
 */
export function refusesStreamableHttp(error: unknown): boolean {
  if (!(error instanceof SdkHttpError)) return false;
  return error.status >= 400 && error.status < 500 && error.status !== 401 && error.status !== 403;
}
