import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { RunningGateway } from './gateway';

/** The protocol version the raw requests below speak. */
export const PROTOCOL_VERSION = '2025-06-18';

export const INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: PROTOCOL_VERSION, capabilities: { roots: { listChanged: true } }, clientInfo: { name: 'raw', version: '1' } },
};

export const TOOLS_LIST = { jsonrpc: '2.0', id: 2, method: 'tools/list' };

export interface McpHttpAnswer {
  status: number;
  headers: Headers;
  text: string;
  json(): any;
}

export const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

/** The headers of a request in an established session. */
export const inSession = (sessionId: string) => ({ 'Mcp-Session-Id': sessionId, 'Mcp-Protocol-Version': PROTOCOL_VERSION });

/** A raw Streamable HTTP request to `/mcp` of `gateway`, with the headers the transport requires, read to its end. */
export async function mcpHttp(
  gateway: RunningGateway,
  init: { method?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<McpHttpAnswer> {
  const response = await fetch(gateway.http('/mcp'), {
    method: init.method ?? 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...init.headers },
    body: init.body === undefined ? undefined : typeof init.body === 'string' ? init.body : JSON.stringify(init.body),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, text, json: () => JSON.parse(text) };
}

/** An `initialize` by `token`; the answer, and the session id when one was started. */
export async function initializeOn(gateway: RunningGateway, token: string): Promise<McpHttpAnswer & { sessionId?: string }> {
  const answer = await mcpHttp(gateway, { body: INITIALIZE, headers: bearer(token) });
  return { ...answer, sessionId: answer.headers.get('mcp-session-id') ?? undefined };
}

/**
 * The SDK's client transport, started against `first` and sending every request to whichever
 * gateway {@link Rerouted.to} last named, as a load balancer between replicas would.
 */
export interface Rerouted {
  transport: StreamableHTTPClientTransport;
  to(gateway: RunningGateway): void;
}

export function reroutableTransport(first: RunningGateway, token: string): Rerouted {
  let target = first;
  const transport = new StreamableHTTPClientTransport(new URL(first.http('/mcp')), {
    requestInit: { headers: bearer(token) },
    fetch: (url, init) => {
      const rerouted = new URL(url);
      rerouted.port = String(target.port);
      return fetch(rerouted, init);
    },
  });
  return { transport, to: (gateway) => (target = gateway) };
}
