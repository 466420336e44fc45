/**
 * The LLM gateway's wire format: every frame either side sends, as the gateway's
 * `src/llm-gateway/llm-gateway.frames.ts` and `dto/client-messages.dto.ts` define them (a
 * contract test in the gateway's repository keeps the two in step).
 */

/**
 * The gateway's error vocabulary, shared by all its protocols. On this API `error` frames carry
 * only the first eleven (the spec's, section 5.4); TOOL_NOT_FOUND, TOOL_EXECUTION_FAILED and
 * INVALID_TOOL_PARAMETERS inside a turn are fed to the model and shown in `tool_call` frames.
 */
export const GATEWAY_ERROR_CODES = [
  'INVALID_MESSAGE',
  'UNKNOWN_MESSAGE_TYPE',
  'LLM_ERROR',
  'SESSION_ERROR',
  'TIMEOUT',
  'INTERNAL_ERROR',
  'TOOL_NOT_FOUND',
  'TOOL_EXECUTION_FAILED',
  'INVALID_TOOL_PARAMETERS',
  'TOOL_RESULT_TIMEOUT',
  'TOOL_REGISTRATION_FAILED',
  'TOOL_TIMEOUT',
  'TOOL_UNAVAILABLE',
  'NOT_FOUND',
  'UNAUTHORIZED',
  'FORBIDDEN',
  'PAYLOAD_TOO_LARGE',
  'UNSUPPORTED_VERSION',
] as const;

export type GatewayErrorCode = (typeof GATEWAY_ERROR_CODES)[number];

/** The response languages `configure {language}` accepts. */
export const LANGUAGE_CODES = ['zh', 'en', 'ja', 'ko', 'de', 'fr', 'ru', 'pt', 'es', 'it'] as const;

export type LanguageCode = (typeof LANGUAGE_CODES)[number];

/** Largest `max_tokens` the gateway accepts in `configure`. */
export const MAX_TOKENS_CEILING = 32768;

// --- server -> client ---

export type StatusName = 'connected' | 'processing' | 'waiting_for_tools' | 'idle';

export interface StatusFrame {
  type: 'status';
  status: StatusName;
  data: Record<string, unknown>;
  timestamp: string;
}

/** One tool call of a turn, as listed in the turn's `llm_response`. */
export interface TurnToolCall {
  call_id: string;
  name: string;
  arguments: unknown;
  /** Where it ran: on the server, or on the device by `tool_callback`. */
  location: 'server' | 'client';
  success: boolean;
}

export interface LlmResponseFrame {
  type: 'llm_response';
  content: string;
  tool_calls: TurnToolCall[];
  is_final: boolean;
  timestamp: string;
}

/** A server tool ran during a turn (spec 5.3). */
export interface ToolCallFrame {
  type: 'tool_call';
  tool_name: string;
  arguments: unknown;
  result: unknown;
  success: boolean;
  duration_ms: number;
  timestamp: string;
}

/** The model wants a tool of this client run (spec 5.4); answered with `tool_result`. */
export interface ToolCallbackFrame {
  type: 'tool_callback';
  call_id: string;
  tool_name: string;
  arguments: Record<string, unknown>;
  timestamp: string;
}

export interface ToolRegistration {
  name: string;
  status: 'registered' | 'failed';
  error?: string;
  /** Why it failed: TOOL_REGISTRATION_FAILED (name, duplicate, limit) or INVALID_TOOL_PARAMETERS (schema). */
  code?: GatewayErrorCode;
}

export interface ToolsRegisteredFrame {
  type: 'tools_registered';
  count: number;
  tools: ToolRegistration[];
  timestamp: string;
}

export interface ErrorFrame {
  type: 'error';
  code: GatewayErrorCode;
  message: string;
  details?: string;
  timestamp: string;
}

export interface PongFrame {
  type: 'pong';
  timestamp: string;
}

export type LlmServerFrame =
  | StatusFrame
  | LlmResponseFrame
  | ToolCallFrame
  | ToolCallbackFrame
  | ToolsRegisteredFrame
  | ErrorFrame
  | PongFrame;

export type LlmServerFrameType = LlmServerFrame['type'];

export const SERVER_FRAME_TYPES: readonly LlmServerFrameType[] = [
  'status',
  'llm_response',
  'tool_call',
  'tool_callback',
  'tools_registered',
  'error',
  'pong',
];

// --- client -> server ---

export interface TextInputFrame {
  type: 'text_input';
  text: string;
  session_id?: string;
  timestamp?: string;
}

/** What `configure` may change; the first three are the spec's, the last two the gateway's. */
export interface ConfigureSettings {
  /** 0.0-1.0. */
  temperature?: number;
  /** An integer, 1 to {@link MAX_TOKENS_CEILING}. */
  max_tokens?: number;
  /** Send the session's history to the model. */
  enable_context?: boolean;
  language?: LanguageCode;
  /** `false` keeps the model's Markdown and emoji (cleaning for speech is per connection). */
  clean_response?: boolean;
}

export interface ConfigureFrame extends ConfigureSettings {
  type: 'configure';
}

export interface StartSessionFrame {
  type: 'start_session';
  session_id?: string;
}

export interface EndSessionFrame {
  type: 'end_session';
}

/** A JSON Schema object; the gateway checks it (and that it describes an object) at registration. */
export type JsonSchema = Record<string, unknown>;

/** A device tool as `register_tools` carries it (spec 4.6). */
export interface ToolDefinition {
  name: string;
  description: string;
  parameters: JsonSchema;
}

export interface RegisterToolsFrame {
  type: 'register_tools';
  tools: ToolDefinition[];
}

export interface ToolResultFrame {
  type: 'tool_result';
  call_id: string;
  success: boolean;
  result?: unknown;
  error?: string | null;
}

export interface PingFrame {
  type: 'ping';
}

export type LlmClientFrame =
  | TextInputFrame
  | ConfigureFrame
  | StartSessionFrame
  | EndSessionFrame
  | RegisterToolsFrame
  | ToolResultFrame
  | PingFrame;

/** Reads a text frame from the gateway; `undefined` for anything that is not a known server frame. */
export function parseServerFrame(text: string): LlmServerFrame | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (value === null || typeof value !== 'object') return undefined;
  const type = (value as { type?: unknown }).type;
  return SERVER_FRAME_TYPES.includes(type as LlmServerFrameType) ? (value as LlmServerFrame) : undefined;
}
