import type { FromSchema } from 'json-schema-to-ts';

/**
 * What a LiteMCP client sends (the spec's `IOBasic`, `ToolCall`), as JSON Schemas: compiled
 * once into the validators of every transport (WebSocket, HTTP, stdio), with the answers their
 * `errorMessage`s give. Unknown fields are ignored.
 */

/** A LiteMCP version triple, `[major, minor, patch]`; `path` names it in messages. */
const version = (path: string) =>
  ({
    type: 'array',
    minItems: 3,
    maxItems: 3,
    items: { type: 'integer', minimum: 0, errorMessage: `${path} must hold three non-negative integers` },
    errorMessage: {
      type: `${path} must be an array [major, minor, patch]`,
      minItems: `${path} must be an array [major, minor, patch]`,
      maxItems: `${path} must be an array [major, minor, patch]`,
    },
  }) as const;

/**
 * `ToolCall`: the tool's name and its arguments as positional strings, in the order of the
 * tool's `parameters`. Numbers and booleans are accepted too and read as their text, since
 * clients written loosely send them; anything else is refused. `path` prefixes its fields in
 * messages (`data.` inside a `call` frame).
 */
const toolCall = (path: string) =>
  ({
    type: 'object',
    properties: {
      version: version(`${path}version`),
      tool: { type: 'string', maxLength: 64, errorMessage: `${path}tool must be a string` },
      arguments: {
        type: 'array',
        maxItems: 256,
        items: { type: ['string', 'number', 'boolean'], errorMessage: `${path}arguments must be an array of strings` },
        errorMessage: { type: `${path}arguments must be an array`, maxItems: `${path}arguments must hold at most 256 values` },
      },
    },
    required: ['tool', 'arguments'],
    errorMessage: { required: { tool: `${path}tool must be a string`, arguments: `${path}arguments must be an array` } },
  }) as const;

/** The body of `POST /litemcp/<tool>`: a bare `ToolCall`. */
export const toolCallSchema = toolCall('');

const callData = toolCall('data.');

/**
 * Past 2^53 - 1 a JSON number cannot be held exactly (`9007199254740993` reads as ...992, and
 * `1e400` as Infinity): echoing it would name another request, and every such id would read as
 * the same one, so each after the first would be ignored as a repeat. Such an id is refused.
 */
const OUT_OF_RANGE_ID = 'id must be an integer from -(2^53 - 1) to 2^53 - 1: a larger one cannot be read exactly';

const frame = {
  version: version('version'),
  id: {
    type: 'integer',
    minimum: -Number.MAX_SAFE_INTEGER,
    maximum: Number.MAX_SAFE_INTEGER,
    errorMessage: { type: 'id must be an integer', minimum: OUT_OF_RANGE_ID, maximum: OUT_OF_RANGE_ID },
  },
} as const;

const frameRequired = { version: 'version must be an array [major, minor, patch]', id: 'id must be an integer' } as const;

/** `get`: data is null or `{}`. */
export const getFrameSchema = {
  type: 'object',
  properties: {
    ...frame,
    type: { const: 'get' },
    data: { type: ['object', 'null'], errorMessage: 'data must be null or {} for a "get" request' },
  },
  required: ['version', 'id', 'type'],
  errorMessage: { required: frameRequired },
} as const;

/** `call`: data is a `ToolCall`. */
export const callFrameSchema = {
  type: 'object',
  properties: {
    ...frame,
    type: { const: 'call' },
    data: { ...callData, errorMessage: { ...callData.errorMessage, type: 'data must be a ToolCall object for a "call" request' } },
  },
  required: ['version', 'id', 'type', 'data'],
  errorMessage: { required: { ...frameRequired, data: 'data must be a ToolCall object for a "call" request' } },
} as const;

export type LiteMcpVersion = [number, number, number];
export type ToolCall = FromSchema<typeof toolCallSchema>;
export type LiteMcpGetFrame = FromSchema<typeof getFrameSchema>;
export type LiteMcpCallFrame = FromSchema<typeof callFrameSchema>;
