import type { AddressInfo } from 'net';
import { loadGatewayConfig } from '../../config/gateway-config';
import { startupSummary } from './startup-summary';

const address = (port: number) => ({ address: '0.0.0.0', family: 'IPv4', port }) as AddressInfo;

describe('startupSummary', () => {
  it('says where everything is, with localhost for a wildcard bind, and what is on', () => {
    const lines = startupSummary(
      loadGatewayConfig({ CLOUD_HOST: '0.0.0.0', ALLOW_UNAUTHENTICATED: true, LLM_MODEL: 'qwen3:8b', LLM_BASE_URL: 'http://127.0.0.1:11434/v1/' }),
      address(9400),
    );
    expect(lines).toEqual([
      'Listening on 0.0.0.0:9400',
      'Web console: http://localhost:9400/',
      'LLM gateway: ws://localhost:9400/ (and ws://localhost:9400/llm)',
      'MCP: http://localhost:9400/mcp (Streamable HTTP) and ws://localhost:9400/mcp (WebSocket); WebSocket also on ws://127.0.0.1:8765/',
      'LiteMCP: ws://localhost:9400/litemcp/<tool> (WebSocket, HTTP GET and POST)',
      'UTCP: http://localhost:9400/utcp (manual), ws://localhost:9400/utcp (provider), ws://localhost:9400/utcp/<tool>',
      'Tool catalogue: http://localhost:9400/tools; health: http://localhost:9400/health',
      'Model: qwen3:8b at http://127.0.0.1:11434/v1/',
      'Auth: off (AUTH_TOKENS is empty: anyone who reaches the port may use every protocol but MCP); MCP always needs a token: a token generated for this run, shown once on stderr',
      'Sessions: in memory (lost on restart; REDIS_URL to share and keep them)',
    ]);
  });

  it('never shows a secret: tokens are counted, credentials in URLs redacted', () => {
    const config = loadGatewayConfig({
      CLOUD_HOST: '127.0.0.1',
      AUTH_TOKENS: 'first-secret,second-secret',
      MCP_WS_AUTH_TOKEN: 'mcp-secret',
      MCP_WS_PORT: '0',
      LLM_BASE_URL: 'https://bob:llm-secret@llm.example/v1/',
      LLM_API_KEY: 'sk-secret',
      REDIS_URL: 'redis://:redis-secret@redis.internal:6379',
      CONSOLE_ENABLED: 'false',
    });
    const text = startupSummary(config, address(1234)).join('\n');
    expect(text).not.toMatch(/secret/);
    expect(text).toContain('Web console: off (CONSOLE_ENABLED=false)');
    expect(text).toContain('MCP: http://127.0.0.1:1234/mcp (Streamable HTTP) and ws://127.0.0.1:1234/mcp (WebSocket)\n');
    expect(text).toContain('Model: Qwen3-30B-A3B at https://***:***@llm.example/v1/ (with LLM_API_KEY)');
    expect(text).toContain('Auth: on (2 tokens in AUTH_TOKENS); MCP always needs a token: MCP_WS_AUTH_TOKEN and AUTH_TOKENS');
    expect(text).toContain('Sessions: in Redis at redis://:***@redis.internal:6379 (prefix vtg:)');
  });

  it('names the file a generated MCP token went to', () => {
    const config = loadGatewayConfig({ MCP_WS_AUTH_TOKEN_FILE: '/run/gateway/mcp-token' });
    expect(startupSummary(config, address(1))).toContain(
      'Auth: off (AUTH_TOKENS is empty: anyone who reaches the port may use every protocol but MCP); MCP always needs a token: a token generated for this run, in /run/gateway/mcp-token',
    );
  });
});
