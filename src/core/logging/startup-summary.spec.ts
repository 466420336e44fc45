import type { AddressInfo } from 'net';
import { loadGatewayConfig } from '../../config/gateway-config';
import { ProtocolDeclaration, ProtocolRegistry } from '../protocols/protocol-registry';
import { startupSummary } from './startup-summary';

const address = (port: number) => ({ address: '0.0.0.0', family: 'IPv4', port }) as AddressInfo;

function protocols(...declarations: ProtocolDeclaration[]): ProtocolRegistry {
  const registry = new ProtocolRegistry();
  for (const declaration of declarations) registry.declare(declaration);
  return registry;
}

describe('startupSummary', () => {
  it('says where everything is, with localhost for a wildcard bind, and what is on, each protocol as it declared itself', () => {
    const lines = startupSummary(
      loadGatewayConfig({ CLOUD_HOST: '0.0.0.0', ALLOW_UNAUTHENTICATED: true, LLM_MODEL: 'qwen3:8b', LLM_BASE_URL: 'http://127.0.0.1:11434/v1/' }),
      address(9400),
      protocols(
        { name: 'beta', title: 'Beta', summary: ({ ws }) => `${ws}/beta` },
        { name: 'alpha', summary: ({ http, config }) => `${http}/alpha (model ${config.llm.model})` },
        { name: 'quiet', summary: () => undefined },
      ),
    );
    expect(lines).toEqual([
      'Listening on 0.0.0.0:9400',
      'Web console: http://localhost:9400/',
      'Beta: ws://localhost:9400/beta',
      'alpha: http://localhost:9400/alpha (model qwen3:8b)',
      'Tool catalogue: http://localhost:9400/tools; health: http://localhost:9400/health; HTTP API: http://localhost:9400/openapi.json',
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
    const text = startupSummary(config, address(1234), protocols()).join('\n');
    expect(text).not.toMatch(/secret/);
    expect(text).toContain('Web console: off (CONSOLE_ENABLED=false)');
    expect(text).toContain('Model: Qwen3-30B-A3B at https://***:***@llm.example/v1/ (with LLM_API_KEY)');
    expect(text).toContain('Auth: on (2 tokens in AUTH_TOKENS); MCP always needs a token: MCP_WS_AUTH_TOKEN and AUTH_TOKENS');
    expect(text).toContain('Sessions: in Redis at redis://:***@redis.internal:6379 (prefix vtg:)');
  });

  it('names the file a generated MCP token went to', () => {
    const config = loadGatewayConfig({ MCP_WS_AUTH_TOKEN_FILE: '/run/gateway/mcp-token' });
    expect(startupSummary(config, address(1), protocols())).toContain(
      'Auth: off (AUTH_TOKENS is empty: anyone who reaches the port may use every protocol but MCP); MCP always needs a token: a token generated for this run, in /run/gateway/mcp-token',
    );
  });
});
