import type { FromSchema } from 'json-schema-to-ts';
import { LANGUAGE_CODES, LIMITS } from './codes.js';

/**
 * What a client sends, as JSON Schemas: the gateway compiles these into its validators at
 * start-up and answers a frame that fails them with INVALID_MESSAGE and the `errorMessage`s
 * below; the frame types are derived from the same schemas. Unknown fields are ignored, as the
 * spec's clients send some (`timestamp`).
 */

const id = (name: string) =>
  ({
    type: 'string',
    minLength: 1,
    maxLength: LIMITS.idLength,
    errorMessage: `${name} must be a non-empty string of at most ${LIMITS.idLength} characters`,
  }) as const;

export const textInputSchema = {
  type: 'object',
  properties: {
    type: { const: 'text_input' },
    /** What the user said; blank text is refused (spec 9.7) and the rest is trimmed. */
    text: {
      type: 'string',
      pattern: '\\S',
      errorMessage: { type: 'text must be a string', pattern: 'Text cannot be empty' },
    },
    /** The session whose context to use; the connection's current one when omitted. */
    session_id: id('session_id'),
    /** The turn's id, carried by every frame of the turn; the gateway makes one when it is omitted. */
    turn_id: id('turn_id'),
    timestamp: { type: 'string', maxLength: 64, errorMessage: 'timestamp must be a string' },
  },
  required: ['type', 'text'],
  errorMessage: { required: { text: 'text must be a string' } },
} as const;

export const configureSchema = {
  type: 'object',
  properties: {
    type: { const: 'configure' },
    temperature: {
      type: 'number',
      minimum: LIMITS.temperature.min,
      maximum: LIMITS.temperature.max,
      errorMessage: {
        type: 'temperature must be a number',
        minimum: `temperature must not be less than ${LIMITS.temperature.min}`,
        maximum: `temperature must not be greater than ${LIMITS.temperature.max}`,
      },
    },
    max_tokens: {
      type: 'integer',
      minimum: LIMITS.maxTokens.min,
      maximum: LIMITS.maxTokens.max,
      errorMessage: {
        type: 'max_tokens must be an integer',
        minimum: `max_tokens must not be less than ${LIMITS.maxTokens.min}`,
        maximum: `max_tokens must not be greater than ${LIMITS.maxTokens.max}`,
      },
    },
    /** Send the session's history to the model. */
    enable_context: { type: 'boolean', errorMessage: 'enable_context must be true or false' },
    language: { enum: LANGUAGE_CODES, errorMessage: `language must be one of ${LANGUAGE_CODES.join(', ')}` },
    /** `false` keeps the model's Markdown and emoji (cleaning for speech is per connection). */
    clean_response: { type: 'boolean', errorMessage: 'clean_response must be true or false' },
    /** Each sentence as an `llm_response` with `is_final: false` while the model writes (per connection). */
    stream: { type: 'boolean', errorMessage: 'stream must be true or false' },
    /** A `text_input` during a turn cancels that turn instead of waiting for it (per connection). */
    barge_in: { type: 'boolean', errorMessage: 'barge_in must be true or false' },
  },
  required: ['type'],
} as const;

/**
 * `cancel`: stops the turn in flight (or the waiting turn `turn_id` names). `spoken` is the
 * text the device actually played: the history keeps only that of the interrupted answer.
 */
export const cancelSchema = {
  type: 'object',
  properties: {
    type: { const: 'cancel' },
    turn_id: id('turn_id'),
    spoken: { type: 'string', maxLength: LIMITS.spokenLength, errorMessage: `spoken must be a string of at most ${LIMITS.spokenLength} characters` },
  },
  required: ['type'],
} as const;

export const startSessionSchema = {
  type: 'object',
  properties: {
    type: { const: 'start_session' },
    /** Resume this session; without one, a new session starts. */
    session_id: id('session_id'),
  },
  required: ['type'],
} as const;

export const endSessionSchema = {
  type: 'object',
  properties: { type: { const: 'end_session' } },
  required: ['type'],
} as const;

export const pingSchema = {
  type: 'object',
  properties: { type: { const: 'ping' } },
  required: ['type'],
} as const;

/**
 * `register_tools` (spec 4.6). Only the frame's shape is checked here: a bounded list of objects
 * (an empty one is answered `count: 0`).
 * Each tool's name, description and schema are checked when it registers and answered on their
 * own (spec 5.5, 11.5), so one bad tool fails alone and the good ones of the frame register.
 */
export const registerToolsSchema = {
  type: 'object',
  properties: {
    type: { const: 'register_tools' },
    tools: {
      type: 'array',
      maxItems: LIMITS.toolsPerFrame,
      items: { type: 'object' },
      errorMessage: {
        type: 'tools must be an array',
        maxItems: `tools must list at most ${LIMITS.toolsPerFrame} tools in one frame`,
      },
    },
  },
  required: ['type', 'tools'],
  errorMessage: { required: { tools: 'tools must be an array' } },
} as const;

/** `tool_result` (spec 4.7): the device's answer to a `tool_callback`. */
export const toolResultSchema = {
  type: 'object',
  properties: {
    type: { const: 'tool_result' },
    call_id: id('call_id'),
    success: { type: 'boolean', errorMessage: 'success must be true or false' },
    result: {},
    error: { type: ['string', 'null'], errorMessage: 'error must be a string' },
  },
  required: ['type', 'call_id', 'success'],
  errorMessage: {
    required: {
      call_id: 'call_id must be a non-empty string',
      success: 'success must be true or false',
    },
  },
} as const;

/** Every client frame's schema, by `type`. */
export const CLIENT_FRAME_SCHEMAS = {
  text_input: textInputSchema,
  configure: configureSchema,
  start_session: startSessionSchema,
  end_session: endSessionSchema,
  register_tools: registerToolsSchema,
  tool_result: toolResultSchema,
  cancel: cancelSchema,
  ping: pingSchema,
} as const;

/**
 * The frame a schema describes, with the fields it names and no others: the gateway ignores
 * unknown fields, but a typed client has no reason to send any.
 */
type FrameOf<S> = FromSchema<Omit<S, 'additionalProperties'> & { readonly additionalProperties: false }>;

export type TextInputFrame = FrameOf<typeof textInputSchema>;
export type ConfigureFrame = FrameOf<typeof configureSchema>;
export type StartSessionFrame = FrameOf<typeof startSessionSchema>;
export type EndSessionFrame = FrameOf<typeof endSessionSchema>;
export type RegisterToolsFrame = FrameOf<typeof registerToolsSchema>;
export type ToolResultFrame = FrameOf<typeof toolResultSchema>;
export type PingFrame = FrameOf<typeof pingSchema>;
export type CancelFrame = FrameOf<typeof cancelSchema>;

/** What `configure` may change; the first three are the spec's, the others the gateway's. */
export type ConfigureSettings = Omit<ConfigureFrame, 'type'>;

export type LlmClientFrame =
  TextInputFrame | ConfigureFrame | StartSessionFrame | EndSessionFrame | RegisterToolsFrame | ToolResultFrame | CancelFrame | PingFrame;

export type LlmClientFrameType = keyof typeof CLIENT_FRAME_SCHEMAS;

/** A JSON Schema object; the gateway checks it (and that it describes an object) at registration. */
export type JsonSchema = Record<string, unknown>;

/** A device tool as `register_tools` carries it (spec 4.6): the fields the gateway requires of each. */
export type ToolDefinition = {
  name: string;
  description: string;
  parameters: JsonSchema;
  /**
   * Who may call it: `agents` (agents and users through the gateway's other protocols, never the
   * model: reboot, firmware update), `model` (the device's own model only), `both` (the default).
   */
  visibility?: 'agents' | 'model' | 'both';
};
