import type { AddressInfo } from 'net';
import { GatewayConfig, hasTokens } from '../../config/gateway-config';
import type { ProtocolRegistry } from '../protocols/protocol-registry';
import { redactUrl } from './redact';

/**
 * The host to put in URLs a person can open: a wildcard bind (`0.0.0.0`, `::`) is reachable
 * as localhost from the machine itself; IPv6 literals need brackets.
 */
export function hostForUrls(host: string): string {
  if (host === '0.0.0.0' || host === '::' || host === '') return 'localhost';
  return host.includes(':') ? `[${host}]` : host;
}

/**
 * What an operator needs at a glance once the gateway listens: where each protocol (as it
 * declared itself in `protocols`, in that order) and the console are, which model it talks
 * to, whether auth is on, where sessions live. One line each; secrets never appear (the model
 * server's and Redis's credentials are redacted, the generated MCP token is only said to
 * exist: it is shown once on its own, see mcp-realm.ts). The first line, `Listening on host:port`, is what scripts and tests wait for.
 */
export function startupSummary(config: GatewayConfig, address: AddressInfo, protocols: ProtocolRegistry): string[] {
  const host = hostForUrls(config.server.host);
  const http = `http://${host}:${address.port}`;
  const ws = `ws://${host}:${address.port}`;
  const { llm, auth, session } = config;
  const lines = [`Listening on ${config.server.host}:${address.port}`];
  lines.push(config.console.enabled ? `Web console: ${http}/` : 'Web console: off (CONSOLE_ENABLED=false)');
  lines.push(...protocols.summaryLines({ http, ws, config }));
  lines.push(`Tool catalogue: ${http}/tools; health: ${http}/health${config.openApi.enabled ? `; HTTP API: ${http}/openapi.json` : ''}`);
  lines.push(`Model: ${llm.model} at ${redactUrl(llm.baseUrl)}${llm.apiKey ? ' (with LLM_API_KEY)' : ''}`);
  lines.push(`Auth: ${authLine(config)}`);
  lines.push(
    session.redisUrl === undefined
      ? 'Sessions: in memory (lost on restart; REDIS_URL to share and keep them)'
      : `Sessions: in Redis at ${redactUrl(session.redisUrl)} (prefix ${session.redisKeyPrefix})`,
  );
  if (auth.allowedOrigins.length > 0) lines.push(`Pages of other sites allowed: ${auth.allowedOrigins.join(', ')}`);
  return lines;
}

function authLine({ auth, mcp }: GatewayConfig): string {
  const named = auth.tokensFile === undefined ? '' : `${auth.tokens.length > 0 ? ', ' : ''}named tokens in AUTH_TOKENS_FILE`;
  const shared = !hasTokens(auth)
    ? 'off (AUTH_TOKENS is empty: anyone who reaches the port may use every protocol but MCP)'
    : `on (${auth.tokens.length > 0 ? `${auth.tokens.length} token${auth.tokens.length === 1 ? '' : 's'} in AUTH_TOKENS` : ''}${named})`;
  if (!mcp.enabled) return shared;
  const configured = [
    mcp.ws.authToken ? 'MCP_WS_AUTH_TOKEN' : '',
    auth.tokens.length > 0 ? 'AUTH_TOKENS' : '',
    auth.tokensFile ? 'AUTH_TOKENS_FILE' : '',
  ].filter(Boolean);
  let mcpTokens: string;
  if (configured.length > 0) mcpTokens = configured.join(' and ');
  else if (mcp.ws.authTokenFile) mcpTokens = `a token generated for this run, in ${mcp.ws.authTokenFile}`;
  else mcpTokens = 'a token generated for this run, shown once on stderr';
  return `${shared}; MCP always needs a token: ${mcpTokens}`;
}
