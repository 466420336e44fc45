import type { GatewayErrorCode } from '../core/errors/gateway-error';

/** The frames the LLM gateway sends (spec section 5), each with an ISO-8601 timestamp. */
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

export interface ToolCallFrame {
  type: 'tool_call';
  tool_name: string;
  arguments: unknown;
  result: unknown;
  success: boolean;
  duration_ms: number;
  timestamp: string;
}

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
  /** Why it failed, in the spec's vocabulary (TOOL_REGISTRATION_FAILED, INVALID_TOOL_PARAMETERS). */
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

const now = () => new Date().toISOString();

export const statusFrame = (status: StatusName, data: Record<string, unknown> = {}): StatusFrame => ({
  type: 'status',
  status,
  data,
  timestamp: now(),
});

export const llmResponseFrame = (content: string, toolCalls: TurnToolCall[]): LlmResponseFrame => ({
  type: 'llm_response',
  content,
  tool_calls: toolCalls,
  is_final: true,
  timestamp: now(),
});

export const toolCallFrame = (frame: Omit<ToolCallFrame, 'type' | 'timestamp'>): ToolCallFrame => ({
  type: 'tool_call',
  ...frame,
  timestamp: now(),
});

export const toolCallbackFrame = (callId: string, toolName: string, args: Record<string, unknown>): ToolCallbackFrame => ({
  type: 'tool_callback',
  call_id: callId,
  tool_name: toolName,
  arguments: args,
  timestamp: now(),
});

export const toolsRegisteredFrame = (tools: ToolRegistration[]): ToolsRegisteredFrame => ({
  type: 'tools_registered',
  count: tools.filter((tool) => tool.status === 'registered').length,
  tools,
  timestamp: now(),
});

export const errorFrame = (code: GatewayErrorCode, message: string, details?: string): ErrorFrame => ({
  type: 'error',
  code,
  message,
  ...(details !== undefined ? { details } : {}),
  timestamp: now(),
});

export const pongFrame = (): PongFrame => ({ type: 'pong', timestamp: now() });
