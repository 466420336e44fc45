import type { Logger } from '@nestjs/common';
import { loadGatewayConfig } from '../config/gateway-config';
import { mcpRealmTokens } from './mcp-realm';

describe('mcpRealmTokens', () => {
  const warnings: string[] = [];
  const logger = { warn: (message: string) => warnings.push(message) } as unknown as Logger;
  const served = { sharedTokens: false, served: true };
  beforeEach(() => (warnings.length = 0));

  it('adds MCP_WS_AUTH_TOKEN', () => {
    expect(mcpRealmTokens(loadGatewayConfig({ MCP_WS_AUTH_TOKEN: 'secret' }), served, logger)).toEqual(['secret']);
    expect(warnings).toEqual([]);
  });

  it('generates a strong token for this run when MCP is served with no token at all, and logs it once', () => {
    const [generated, ...rest] = mcpRealmTokens(loadGatewayConfig({}), served, logger);
    expect(rest).toEqual([]);
    expect(generated).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(mcpRealmTokens(loadGatewayConfig({}), served, logger)[0]).not.toBe(generated);
    expect(warnings[0]).toContain(`generated for this run: ${generated}`);
  });

  it.each([
    ['AUTH_TOKENS has tokens', {}, { sharedTokens: true, served: true }],
    ['MCP is off', { MCP_ENABLED: 'false' }, served],
    ['nothing serves MCP (the stdio command)', {}, { sharedTokens: false, served: false }],
  ])('adds nothing when %s', (_name, settings, context) => {
    expect(mcpRealmTokens(loadGatewayConfig(settings), context, logger)).toEqual([]);
    expect(warnings).toEqual([]);
  });

  it('warns about the spec\'s placeholder when it is explicitly allowed', () => {
    const config = loadGatewayConfig({ MCP_WS_AUTH_TOKEN: 'ChangeMe!', MCP_WS_ALLOW_DEFAULT_TOKEN: 'true' });
    expect(mcpRealmTokens(config, served, logger)).toEqual(['ChangeMe!']);
    expect(warnings).toEqual([expect.stringMatching(/placeholder "ChangeMe!"/)]);
  });
});
