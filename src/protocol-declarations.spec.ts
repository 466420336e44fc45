import type { AddressInfo } from 'net';
import { loadGatewayConfig } from './config/gateway-config';
import { startupSummary } from './core/logging/startup-summary';
import { ProtocolRegistry } from './core/protocols/protocol-registry';
import { LITEMCP_DECLARATION } from './litemcp/litemcp.protocol';
import { LLM_GATEWAY_DECLARATION } from './llm-gateway/llm-gateway.protocol';
import { MCP_DECLARATION } from './mcp/mcp.protocol';
import { UTCP_DECLARATION } from './utcp/utcp.protocol';

const address = (port: number) => ({ address: '0.0.0.0', family: 'IPv4', port }) as AddressInfo;

/** The four protocols as their modules declare them, in the order the gateway lists them. */
function builtIn(): ProtocolRegistry {
  const registry = new ProtocolRegistry();
  for (const declaration of [LLM_GATEWAY_DECLARATION, MCP_DECLARATION, LITEMCP_DECLARATION, UTCP_DECLARATION]) registry.declare(declaration);
  return registry;
}

describe('the protocols as they declare themselves', () => {
  it('say where they are in the startup summary', () => {
    const config = loadGatewayConfig({ CLOUD_HOST: '0.0.0.0', ALLOW_UNAUTHENTICATED: true });
    expect(startupSummary(config, address(9400), builtIn()).slice(2, 6)).toEqual([
      'LLM gateway: ws://localhost:9400/ (and ws://localhost:9400/llm)',
      'MCP: http://localhost:9400/mcp (Streamable HTTP) and ws://localhost:9400/mcp (WebSocket); WebSocket also on ws://127.0.0.1:8765/',
      'LiteMCP: ws://localhost:9400/litemcp/<tool> (WebSocket, HTTP GET and POST)',
      'UTCP: http://localhost:9400/utcp (manual), ws://localhost:9400/utcp (provider), ws://localhost:9400/utcp/<tool>',
    ]);
  });

  it('say MCP without its dedicated listener, or that it is off', () => {
    const lines = (settings: Record<string, string>) => startupSummary(loadGatewayConfig({ CLOUD_HOST: '127.0.0.1', ...settings }), address(1234), builtIn());
    expect(lines({ MCP_WS_PORT: '0' })).toContain('MCP: http://127.0.0.1:1234/mcp (Streamable HTTP) and ws://127.0.0.1:1234/mcp (WebSocket)');
    expect(lines({ MCP_ENABLED: 'false' })).toContain('MCP: off (MCP_ENABLED=false)');
  });

  it("are what tokens may be granted, and MCP's routes are its OAuth protected resource", () => {
    const registry = builtIn();
    expect(registry.names()).toEqual(['llm', 'mcp', 'litemcp', 'utcp']);
    expect(['/mcp', '/mcp/devices/x', '/mcpx', '/utcp'].map((path) => registry.protectedResourceOf(path))).toEqual(['/mcp', '/mcp', undefined, undefined]);
  });
});
