import type {
  ErrorFrame,
  GatewayErrorCode,
  LlmResponseFrame,
  PongFrame,
  StatusFrame,
  StatusName,
  ToolCallbackFrame,
  ToolCallFrame,
  ToolRegistration,
  ToolsRegisteredFrame,
  TurnTiming,
  TurnToolCall,
} from './protocol';

/** Builders of the frames the LLM gateway sends (spec section 5, typed by the wire contract), each stamped with the time. */

const now = () => new Date().toISOString();

export const statusFrame = (status: StatusName, data: Record<string, unknown> = {}): StatusFrame => ({
  type: 'status',
  status,
  data,
  timestamp: now(),
});

/** A turn's answer: the final one, with its timing, and `history_saved: false` when the session's history could not keep it. */
export const llmResponseFrame = (content: string, toolCalls: TurnToolCall[], timing?: TurnTiming, historySaved = true): LlmResponseFrame => ({
  type: 'llm_response',
  content,
  tool_calls: toolCalls,
  is_final: true,
  ...(timing && { timing }),
  ...(!historySaved && { history_saved: false }),
  timestamp: now(),
});

/** One sentence of a streaming turn, ready to speak. */
export const partialResponseFrame = (content: string, seq: number): LlmResponseFrame => ({
  type: 'llm_response',
  content,
  tool_calls: [],
  is_final: false,
  seq,
  timestamp: now(),
});

export const toolCallFrame = (frame: Omit<ToolCallFrame, 'type' | 'timestamp'>): ToolCallFrame => ({
  type: 'tool_call',
  ...frame,
  timestamp: now(),
});

export const toolCallbackFrame = (callId: string, toolName: string, args: Record<string, unknown>, turnId?: string): ToolCallbackFrame => ({
  type: 'tool_callback',
  call_id: callId,
  tool_name: toolName,
  arguments: args,
  ...(turnId !== undefined && { turn_id: turnId }),
  timestamp: now(),
});

export const toolsRegisteredFrame = (tools: ToolRegistration[]): ToolsRegisteredFrame => ({
  type: 'tools_registered',
  count: tools.filter((tool) => tool.status === 'registered').length,
  tools,
  timestamp: now(),
});

export const errorFrame = (code: GatewayErrorCode, message: string, details?: ErrorFrame['details']): ErrorFrame => ({
  type: 'error',
  code,
  message,
  ...(details !== undefined ? { details } : {}),
  timestamp: now(),
});

export const pongFrame = (): PongFrame => ({ type: 'pong', timestamp: now() });
