import type { FromSchema } from 'json-schema-to-ts';
import { MAX_REQUEST_ID_LENGTH } from '../utcp.frames';

/** What a UTCP 0.1 client sends on `/utcp`, as JSON Schemas compiled once into the provider's validators. */

const requestId = {
  anyOf: [{ type: 'string', minLength: 1, maxLength: MAX_REQUEST_ID_LENGTH }, { type: 'number' }],
  errorMessage: `id must be a non-empty string (up to ${MAX_REQUEST_ID_LENGTH} characters) or a number`,
} as const;

/** `{"type":"call","tool","id","params"}`. `params` is checked against the tool's schema, not here. */
export const callFrameSchema = {
  type: 'object',
  properties: {
    type: { const: 'call' },
    id: requestId,
    tool: { type: 'string', minLength: 1, maxLength: 64, errorMessage: 'tool must be a non-empty string' },
    params: {},
  },
  required: ['type', 'id', 'tool'],
  errorMessage: { required: { id: requestId.errorMessage, tool: 'tool must be a non-empty string' } },
} as const;

/** `{"type":"discover","id"?}`: the 0.1-style discovery message, answered with `discovery_response`. */
export const discoverFrameSchema = {
  type: 'object',
  properties: { type: { const: 'discover' }, id: requestId },
  required: ['type'],
} as const;

export type UtcpCallFrame = FromSchema<typeof callFrameSchema>;
export type UtcpDiscoverFrame = FromSchema<typeof discoverFrameSchema>;

/** `{"type":"auth","token"}`: read by hand, since whatever is wrong with it, the answer is an auth failure. */
export interface UtcpAuthFrame {
  type: 'auth';
  token?: unknown;
}
