import type { Logger } from '@nestjs/common';
import { randomBytes } from 'crypto';
import { GatewayConfig, MCP_PLACEHOLDER_TOKEN } from '../config/gateway-config';

/** What decides whether the MCP realm needs a token of its own. */
export interface McpRealmContext {
  /** `AUTH_TOKENS` has tokens, which the realm accepts too. */
  sharedTokens: boolean;
  /** The app serves MCP (an HTTP application, not an application context such as the stdio command). */
  served: boolean;
}

/**
 * The tokens the MCP realm adds to `AUTH_TOKENS`: `MCP_WS_AUTH_TOKEN`; or, when MCP is served
 * with neither configured, a strong random token for this run, logged once, so that MCP is never
 * open to anyone who can reach the port.
 */
export function mcpRealmTokens(config: GatewayConfig, { sharedTokens, served }: McpRealmContext, logger: Logger): string[] {
  const { enabled, ws } = config.mcp;
  if (ws.authToken) {
    if (ws.authToken === MCP_PLACEHOLDER_TOKEN) {
      logger.warn(`MCP_WS_AUTH_TOKEN is the spec's placeholder "${MCP_PLACEHOLDER_TOKEN}" (MCP_WS_ALLOW_DEFAULT_TOKEN=true): anyone who has read the spec can connect`);
    }
    return [ws.authToken];
  }
  if (!enabled || !served || sharedTokens) return [];
  const generated = randomBytes(24).toString('base64url');
  logger.warn(
    `No MCP token is configured (MCP_WS_AUTH_TOKEN or AUTH_TOKENS), so MCP clients must send this one, generated for this run: ${generated}`,
  );
  return [generated];
}
