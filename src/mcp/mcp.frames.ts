import type { Implementation, JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

/**
 * Error codes of the envelope protocol (mcp-over-websocket.md, section 4): JSON-RPC codes for a
 * frame that cannot be read as an envelope, HTTP-like codes for the session.
 */
export const EnvelopeErrorCode = {
  /** Not JSON. */
  PARSE_ERROR: -32700,
  /** JSON, but not an envelope the client may send (type, fields, payload). */
  INVALID_REQUEST: -32600,
  INTERNAL_ERROR: -32603,
  /** A well-formed envelope the session cannot take: too large, a second `auth`. */
  BAD_MESSAGE: 400,
  /** Not authenticated, or authentication failed; the connection is closed. */
  UNAUTHORIZED: 401,
  /** A `sessionId` that is not this connection's. */
  FORBIDDEN: 403,
  /** No `auth` within `MCP_WS_AUTH_TIMEOUT`; the connection is closed. */
  AUTH_TIMEOUT: 408,
  /** The server is shutting down. */
  UNAVAILABLE: 503,
} as const;

export type EnvelopeErrorCode = (typeof EnvelopeErrorCode)[keyof typeof EnvelopeErrorCode];

/** WebSocket close codes: 4000 + the envelope code when a session ends for one. */
export const EnvelopeCloseCode = {
  NORMAL: 1000,
  UNAUTHORIZED: 4401,
  TIMEOUT: 4408,
} as const;

/** The envelope types a client sends (section 2.2); `ping` and `error` only go the other way. */
export const CLIENT_ENVELOPE_TYPES = ['auth', 'message', 'pong', 'close'] as const;

/** A failure reported to the client as an `error` envelope (section 2.3.5). */
export class EnvelopeError extends Error {
  constructor(
    readonly code: EnvelopeErrorCode,
    message: string,
    /** Detail for the client, such as which field is wrong. */
    readonly data: string | null = null,
  ) {
    super(message);
    this.name = 'EnvelopeError';
  }
}

export interface EnvelopeErrorBody {
  code: number;
  message: string;
  data?: string | null;
}

/** Every envelope the server sends; `timestamp` is Unix time in milliseconds. */
export type ServerEnvelope =
  | {
      type: 'auth';
      sessionId: string;
      status: 'authenticated';
      serverInfo: Implementation;
      heartbeatInterval: number;
      timestamp: number;
    }
  | { type: 'auth'; status: 'failed'; error: EnvelopeErrorBody; timestamp: number }
  | { type: 'message'; sessionId: string; payload: JSONRPCMessage; timestamp: number }
  | { type: 'ping'; sessionId: string; timestamp: number }
  | { type: 'error'; sessionId?: string; error: EnvelopeErrorBody; timestamp: number }
  | { type: 'close'; sessionId: string; reason: string; timestamp: number };

/** Builders of the server's envelopes, stamped with the time they are made. */
export const Envelope = {
  authenticated: (sessionId: string, serverInfo: Implementation, heartbeatInterval: number): ServerEnvelope => ({
    type: 'auth',
    sessionId,
    status: 'authenticated',
    serverInfo,
    heartbeatInterval,
    timestamp: Date.now(),
  }),
  authFailed: (message: string): ServerEnvelope => ({
    type: 'auth',
    status: 'failed',
    error: { code: EnvelopeErrorCode.UNAUTHORIZED, message },
    timestamp: Date.now(),
  }),
  message: (sessionId: string, payload: JSONRPCMessage): ServerEnvelope => ({ type: 'message', sessionId, payload, timestamp: Date.now() }),
  ping: (sessionId: string): ServerEnvelope => ({ type: 'ping', sessionId, timestamp: Date.now() }),
  error: (error: EnvelopeError, sessionId?: string): ServerEnvelope => ({
    type: 'error',
    ...(sessionId === undefined ? {} : { sessionId }),
    error: { code: error.code, message: error.message, data: error.data },
    timestamp: Date.now(),
  }),
  close: (sessionId: string, reason: string): ServerEnvelope => ({ type: 'close', sessionId, reason, timestamp: Date.now() }),
};
