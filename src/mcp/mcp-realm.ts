import type { Logger } from '@nestjs/common';
import { randomBytes } from 'crypto';
import { chmodSync, writeFileSync } from 'fs';
import { GatewayConfig, MCP_PLACEHOLDER_TOKEN } from '../config/gateway-config';
import { StartupError } from '../shared/startup-error';
import { warnWhateverTheLevel } from '../core/logging/gateway-logger';

/** What decides whether the MCP realm needs a token of its own. */
export interface McpRealmContext {
  /** `AUTH_TOKENS` has tokens, which the realm accepts too. */
  sharedTokens: boolean;
  /** The app serves MCP (an HTTP application, not an application context such as the stdio command). */
  served: boolean;
}

/** Shows a generated token to the operator; by default once on stderr, whatever the log level. */
export type TokenAnnouncer = (message: string) => void;

/**
 * The tokens the MCP realm adds to `AUTH_TOKENS`: `MCP_WS_AUTH_TOKEN`; or, when MCP is served
 * with neither configured, a strong random token for this run, so that MCP is never open to
 * anyone who can reach the port. That token is useless unless someone sees it: it is written to
 * `MCP_WS_AUTH_TOKEN_FILE` when set (owner-only, and then not printed), else shown once on
 * stderr even at `CLOUD_LOG_LEVEL=ERROR`.
 */
export function mcpRealmTokens(
  config: GatewayConfig,
  { sharedTokens, served }: McpRealmContext,
  logger: Logger,
  announce: TokenAnnouncer = (message) => warnWhateverTheLevel(config.server, 'MCP', message),
): string[] {
  const { enabled, ws } = config.mcp;
  if (ws.authToken) {
    if (ws.authToken === MCP_PLACEHOLDER_TOKEN) {
      logger.warn(
        `MCP_WS_AUTH_TOKEN is the spec's placeholder "${MCP_PLACEHOLDER_TOKEN}" (MCP_WS_ALLOW_DEFAULT_TOKEN=true): anyone who has read the spec can connect`,
      );
    }
    return [ws.authToken];
  }
  if (!enabled || !served || sharedTokens) return [];
  const generated = randomBytes(24).toString('base64url');
  if (ws.authTokenFile) {
    writeTokenFile(ws.authTokenFile, generated);
    logger.warn(`No MCP token is configured (MCP_WS_AUTH_TOKEN or AUTH_TOKENS); the one generated for this run is in ${ws.authTokenFile}`);
  } else {
    announce(`No MCP token is configured (MCP_WS_AUTH_TOKEN or AUTH_TOKENS), so MCP clients must send this one, generated for this run: ${generated}`);
  }
  return [generated];
}

function writeTokenFile(path: string, token: string): void {
  try {
    writeFileSync(path, `${token}\n`, { mode: 0o600 });
    chmodSync(path, 0o600); // a file that was already there keeps its mode otherwise
  } catch (error) {
    throw new StartupError(`Cannot write the generated MCP token to ${path} (MCP_WS_AUTH_TOKEN_FILE): ${(error as Error).message}`);
  }
}
