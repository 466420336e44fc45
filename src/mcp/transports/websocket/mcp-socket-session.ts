import type { Logger } from '@nestjs/common';
import type { GatewayConfig } from '../../../config/gateway-config';
import type { MessageAuthenticator } from '../../../core/auth/message-authenticator';
import type { EnvelopeError } from '../../mcp.frames';
import type { McpMethods } from '../../methods/mcp-methods';
import type { Sdk1Binder } from '../../revisions/2025/sdk1-binder';
import type { Sdk2Binder } from '../../revisions/2026/sdk2-binder';

/** What an MCP WebSocket session needs from the rest of the gateway. */
export interface McpSessionContext {
  auth: MessageAuthenticator;
  methods: McpMethods;
  /** Binds the connection's 2025 session. */
  sdk1: Sdk1Binder;
  /** Binds the connection's 2026-07-28 server. */
  sdk2: Sdk2Binder;
  /** `WS_MAX_CALLS_IN_FLIGHT`, for the 2026 requests a connection runs at once. */
  maxCallsInFlight: number;
  settings: GatewayConfig['mcp']['ws'];
  logger: Logger;
}

/** One MCP WebSocket connection's state: the spec's envelope, or plain JSON-RPC frames. */
export interface McpSocketSession {
  /** A JSON-RPC message of a plain connection, or the payload of an envelope's `message`. */
  deliver(payload: unknown): void;
  /** Tells the client about a failure in the session's own vocabulary. */
  reportError(error: EnvelopeError): void;
  /** The route's heartbeat pings: the protocol's own ping, or nothing when WebSocket pings do. */
  ping?(): void;
  /** The peer stayed silent past the heartbeat timeout: say so the protocol's way and close. */
  heartbeatTimedOut(timeoutMs: number): void;
  /** The server is going away: say goodbye the protocol's way, then let go of everything. */
  shutdown(): Promise<void>;
  /** The connection closed: closes the SDK servers. Safe to call twice. */
  dispose(): Promise<void>;
}
