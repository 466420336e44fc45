import type { Logger } from '@nestjs/common';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { loadGatewayConfig } from '../config/gateway-config';
import { StartupError } from '../shared/startup-error';
import { mcpRealmTokens } from './mcp-realm';

describe('mcpRealmTokens', () => {
  const warnings: string[] = [];
  const logger = { warn: (message: string) => warnings.push(message) } as unknown as Logger;
  const announced: string[] = [];
  const announce = (message: string) => announced.push(message);
  const served = { sharedTokens: false, served: true };
  beforeEach(() => {
    warnings.length = 0;
    announced.length = 0;
  });

  it('adds MCP_WS_AUTH_TOKEN', () => {
    expect(mcpRealmTokens(loadGatewayConfig({ MCP_WS_AUTH_TOKEN: 'secret' }), served, logger)).toEqual(['secret']);
    expect(warnings).toEqual([]);
  });

  it('generates a strong token for this run when MCP is served with no token at all, and announces it once', () => {
    const [generated, ...rest] = mcpRealmTokens(loadGatewayConfig({}), served, logger, announce);
    expect(rest).toEqual([]);
    expect(generated).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(announced).toEqual([expect.stringContaining(`generated for this run: ${generated}`)]);
    expect(warnings).toEqual([]);
    expect(mcpRealmTokens(loadGatewayConfig({}), served, logger, announce)[0]).not.toBe(generated);
  });

  describe('with MCP_WS_AUTH_TOKEN_FILE', () => {
    let directory: string;
    beforeEach(() => (directory = mkdtempSync(join(tmpdir(), 'mcp-token-'))));
    afterEach(() => rmSync(directory, { recursive: true, force: true }));

    it('writes the generated token to the file, readable by its owner only, and does not print it', () => {
      const file = join(directory, 'token');
      writeFileSync(file, 'stale', { mode: 0o644 });
      const [generated] = mcpRealmTokens(loadGatewayConfig({ MCP_WS_AUTH_TOKEN_FILE: file }), served, logger, announce);
      expect(readFileSync(file, 'utf8')).toBe(`${generated}\n`);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(announced).toEqual([]);
      expect(warnings).toEqual([`No MCP token is configured (MCP_WS_AUTH_TOKEN or AUTH_TOKENS); the one generated for this run is in ${file}`]);
      expect(warnings[0]).not.toContain(generated);
    });

    it('stops the start with the reason when the file cannot be written', () => {
      const file = join(directory, 'missing-folder', 'token');
      expect(() => mcpRealmTokens(loadGatewayConfig({ MCP_WS_AUTH_TOKEN_FILE: file }), served, logger, announce)).toThrow(
        new StartupError(`Cannot write the generated MCP token to ${file} (MCP_WS_AUTH_TOKEN_FILE): ENOENT: no such file or directory, open '${file}'`),
      );
    });

    it('writes nothing when a token is configured', () => {
      const file = join(directory, 'token');
      expect(mcpRealmTokens(loadGatewayConfig({ MCP_WS_AUTH_TOKEN: 'secret', MCP_WS_AUTH_TOKEN_FILE: file }), served, logger, announce)).toEqual(['secret']);
      expect(() => statSync(file)).toThrow(/ENOENT/);
    });
  });

  it.each([
    ['AUTH_TOKENS has tokens', {}, { sharedTokens: true, served: true }],
    ['MCP is off', { MCP_ENABLED: 'false' }, served],
    ['nothing serves MCP (the stdio command)', {}, { sharedTokens: false, served: false }],
  ])('adds nothing when %s', (_name, settings, context) => {
    expect(mcpRealmTokens(loadGatewayConfig(settings), context, logger, announce)).toEqual([]);
    expect(warnings).toEqual([]);
    expect(announced).toEqual([]);
  });

  it("warns about the spec's placeholder when it is explicitly allowed", () => {
    const config = loadGatewayConfig({ MCP_WS_AUTH_TOKEN: 'ChangeMe!', MCP_WS_ALLOW_DEFAULT_TOKEN: 'true' });
    expect(mcpRealmTokens(config, served, logger)).toEqual(['ChangeMe!']);
    expect(warnings).toEqual([expect.stringMatching(/placeholder "ChangeMe!"/)]);
  });
});
