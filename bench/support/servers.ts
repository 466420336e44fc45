import { join } from 'path';
import { BENCH_BUILD, PROJECT_ROOT, ServerSpec } from './processes';

/** The bearer token every server of the bench is started with: auth stays on, as in production. */
export const BENCH_TOKEN = 'bench-token-0123456789';

/**
 * The gateway as users start it (`node dist/main.js`), on loopback, with auth on and its JSON
 * logs at WARN (request logs would measure the terminal). In-memory sessions; the limits that
 * would refuse the bench's connections raised. `BENCH_GATEWAY_MAIN` points at another build's
 * `main.js`, to measure an older commit against the same baseline (BENCHMARKS.md, before/after);
 * `BENCH_GATEWAY_SETTINGS` (a JSON object of settings) overrides these, to measure what a setting
 * costs (`{"CLOUD_LOG_LEVEL":"INFO"}`: the audit log's lines written).
 */
export function gatewayServer(port: number, env: Record<string, string> = {}): ServerSpec {
  return {
    name: 'gateway',
    args: [process.env.BENCH_GATEWAY_MAIN ?? join(PROJECT_ROOT, 'dist', 'main.js')],
    env: {
      CLOUD_HOST: '127.0.0.1',
      CLOUD_PORT: String(port),
      MCP_WS_PORT: '0',
      AUTH_TOKENS: BENCH_TOKEN,
      CLOUD_LOG_LEVEL: 'WARN',
      REDIS_URL: '',
      MCP_SERVERS_FILE: '',
      CLOUD_MAX_CONNECTIONS: '1000',
      MCP_WS_MAX_CONNECTIONS: '1000',
      // Every bench client comes from 127.0.0.1 with the one bench token.
      WS_MAX_CONNECTIONS: '100000',
      WS_MAX_CONNECTIONS_PER_PROTOCOL: '100000',
      WS_MAX_CONNECTIONS_PER_ADDRESS: '0',
      WS_MAX_CONNECTIONS_PER_PRINCIPAL: '0',
      LLM_BASE_URL: 'http://127.0.0.1:9/v1/',
      ...env,
      ...(JSON.parse(process.env.BENCH_GATEWAY_SETTINGS ?? '{}') as Record<string, string>),
    },
  };
}

/** The baseline: a bare `ws` server answering the same frames (servers/bare-ws-server.ts). */
export function bareWsServer(): ServerSpec {
  return { name: 'bare ws', args: [join(BENCH_BUILD, 'servers', 'bare-ws-server.js')], env: { BENCH_TOKEN } };
}

/**
 * The LLM turn's baseline: a bare `ws` server streaming the same completion with the `openai`
 * package (servers/bare-turn-server.ts); `BENCH_TURN_REQUEST` names the gateway's request body.
 */
export function bareTurnServer(env: Record<string, string>): ServerSpec {
  return { name: 'bare turn', args: [join(BENCH_BUILD, 'servers', 'bare-turn-server.js')], env: { BENCH_TOKEN, ...env } };
}
