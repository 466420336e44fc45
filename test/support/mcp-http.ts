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

/** The 2026-07-28 envelope of a raw request: the revision, the client, and the `capabilities` it declares. */
export function modernEnvelope(capabilities: Record<string, unknown> = {}) {
  return {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientInfo': { name: 'raw-2026', version: '1' },
    'io.modelcontextprotocol/clientCapabilities': capabilities,
  };
}

/** What a raw 2026 request is answered: its JSON-RPC result or error. */
export interface ModernAnswer {
  result?: Record<string, any>;
  error?: { code: number; message: string; data?: unknown };
}

let modernRequestIds = 0;

/**
 * One raw request of the 2026-07-28 revision to `/mcp` by `token` (no session: the envelope in
 * `_meta`, the binding's `Mcp-Method`/`Mcp-Name` headers), its answer read from JSON or from the
 * response stream.
 */
export async function modernRequest(
  gateway: RunningGateway,
  token: string,
  method: string,
  params: Record<string, unknown>,
  capabilities: Record<string, unknown> = {},
): Promise<ModernAnswer> {
  const id = ++modernRequestIds;
  const name = params.name ?? params.taskId ?? params.uri;
  const response = await fetch(gateway.http('/mcp'), {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      authorization: `Bearer ${token}`,
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': method,
      ...(typeof name === 'string' && { 'mcp-name': name }),
    },
    body: JSON.stringify({ jsonrpc: '2.0', id, method, params: { ...params, _meta: modernEnvelope(capabilities) } }),
  });
  const body = await response.text();
  if (!response.headers.get('content-type')?.includes('text/event-stream')) return JSON.parse(body) as ModernAnswer;
  const answer = body.split('\n').find((line) => line.startsWith('data: ') && line.includes(`"id":${id}`));
  return JSON.parse(answer!.slice('data: '.length)) as ModernAnswer;
}
