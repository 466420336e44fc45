import type { Logger } from '@nestjs/common';
import type { GatewayConfig } from '../../config/gateway-config';
import type { AccessTokenService } from '../../core/auth/access-token.service';
import type { McpServerFactory } from '../mcp-server.factory';
import type { EnvelopeError } from './envelope';

/** What an MCP WebSocket session needs from the rest of the gateway. */
export interface McpSessionContext {
  tokens: AccessTokenService;
  servers: McpServerFactory;
  settings: GatewayConfig['mcp']['ws'];
  logger: Logger;
}

/** One MCP WebSocket connection: the spec's envelope, or plain JSON-RPC frames. */
export interface McpSocketSession {
  /** Tells the client about a failure in the session's own vocabulary. */
  reportError(error: EnvelopeError): void;
  /** The server is going away: say goodbye the protocol's way, then let go of everything. */
  shutdown(): Promise<void>;
  /** The socket closed: stops the timers and closes the SDK server. Safe to call twice. */
  dispose(): Promise<void>;
}
