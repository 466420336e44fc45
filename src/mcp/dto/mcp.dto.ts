import type { FromSchema } from 'json-schema-to-ts';

/**
 * The envelopes an MCP client sends (mcp-over-websocket.md, section 2.1), as JSON Schemas
 * compiled once; a frame that fails one is -32600 "Invalid Request" naming every bad field.
 * `auth` is read by hand instead: whatever is wrong with it, the answer is the spec's auth
 * failure (401) and the connection closes.
 */

const envelope = {
  /** Assigned by the server at `auth`; when a client repeats it, it must be its own. */
  sessionId: { type: 'string', maxLength: 256, errorMessage: 'sessionId must be a string' },
  /** Unix time in milliseconds. */
  timestamp: { type: 'number', errorMessage: 'timestamp must be a number (Unix time in milliseconds)' },
} as const;

/** `message`: one JSON-RPC message; the SDK's schema checks it once it reaches the transport. */
export const messageEnvelopeSchema = {
  type: 'object',
  properties: {
    ...envelope,
    type: { const: 'message' },
    payload: { type: 'object', errorMessage: 'payload must be a JSON-RPC 2.0 message object' },
  },
  required: ['type', 'payload'],
  errorMessage: { required: { payload: 'payload must be a JSON-RPC 2.0 message object' } },
} as const;

/** `pong`: the answer to the server's `ping`. */
export const pongEnvelopeSchema = {
  type: 'object',
  properties: { ...envelope, type: { const: 'pong' } },
  required: ['type'],
} as const;

/** `close`: the client ends the session. */
export const closeEnvelopeSchema = {
  type: 'object',
  properties: { ...envelope, type: { const: 'close' }, reason: { type: 'string', maxLength: 1024, errorMessage: 'reason must be a string' } },
  required: ['type'],
} as const;

export type MessageEnvelope = FromSchema<typeof messageEnvelopeSchema>;
export type PongEnvelope = FromSchema<typeof pongEnvelopeSchema>;
export type CloseEnvelope = FromSchema<typeof closeEnvelopeSchema>;

/** The fields every client envelope may carry. */
export type ClientEnvelope = { sessionId?: string };

export interface AuthEnvelope {
  type: 'auth';
  token?: unknown;
  clientInfo?: unknown;
}
