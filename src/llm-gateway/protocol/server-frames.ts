import type { GatewayErrorCode } from './codes.js';

/** What the gateway sends (spec section 5), each frame with an ISO-8601 timestamp. */

export type StatusName = 'connected' | 'processing' | 'waiting_for_tools' | 'cancelled' | 'idle';

/** Every frame a turn produces names it: the `turn_id` of its `text_input`, or one the gateway made. */
export interface TurnFrame {
  turn_id?: string;
  /**
   * `push` on every frame of speech no `text_input` asked for: a sentence an agent, the HTTP
   * route or a reminder pushed (`llm_response`, then `status: idle`), or a whole turn started for
   * the device. A spec client simply speaks it.
   */
  origin?: 'push';
}

export interface StatusFrame extends TurnFrame {
  type: 'status';
  status: StatusName;
  data: Record<string, unknown>;
  timestamp: string;
}

/** Where a turn's time went, in milliseconds from its `text_input`; on its final `llm_response`. */
export interface TurnTiming {
  /** The model's first token of text. */
  first_token_ms: number | null;
  /** The first sentence sent: the first partial when streaming, else the final answer. */
  first_sentence_ms: number | null;
  total_ms: number;
  /** Waiting for the model, every call of the turn. */
  llm_ms: number;
  /** Running tool rounds. */
  tools_ms: number;
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

/**
 * An answer. With streaming on, each sentence comes as it is ready (`is_final: false`, `seq`
 * 0, 1, 2...), then the final one (`is_final: true`), whose content is the partials' contents
 * concatenated. Without, the final one alone.
 */
export interface LlmResponseFrame extends TurnFrame {
  type: 'llm_response';
  content: string;
  tool_calls: TurnToolCall[];
  is_final: boolean;
  /** A partial's place in the turn. */
  seq?: number;
  /** On the final one. */
  timing?: TurnTiming;
  /**
   * On the final one, only when the session's history could not keep this exchange (the session
   * store failed, or the session is gone): the model will not see it in later turns.
   */
  history_saved?: false;
  /** On a pushed sentence that a reminder said: the reminder's id. */
  reminder_id?: string;
  timestamp: string;
}

/** A server tool ran during a turn (spec 5.3). */
export interface ToolCallFrame extends TurnFrame {
  type: 'tool_call';
  tool_name: string;
  arguments: unknown;
  result: unknown;
  /** The result was longer than the gateway echoes (LLM_TOOL_CALL_ECHO_CHARS): `result` is the start of its text. */
  result_truncated?: true;
  /** With `result_truncated`: the length of the whole result's text, in characters. */
  result_chars?: number;
  success: boolean;
  duration_ms: number;
  timestamp: string;
}

/** The model wants a tool of this client run (spec 5.4); answered with `tool_result`. */
export interface ToolCallbackFrame extends TurnFrame {
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

export interface ErrorFrame extends TurnFrame {
  type: 'error';
  code: GatewayErrorCode;
  message: string;
  /**
   * A string for most codes; `{retry_after_s}` (seconds to wait) for RATE_LIMITED; for
   * BUDGET_EXCEEDED, which budget is spent: `{meter, period, scope, limit, resets_at}`.
   */
  details?: string | { retry_after_s: number } | { meter: string; period: string; scope: string; limit: number; resets_at: string };
  timestamp: string;
}

export interface PongFrame {
  type: 'pong';
  timestamp: string;
}

export type LlmServerFrame = StatusFrame | LlmResponseFrame | ToolCallFrame | ToolCallbackFrame | ToolsRegisteredFrame | ErrorFrame | PongFrame;

export type LlmServerFrameType = LlmServerFrame['type'];

export const SERVER_FRAME_TYPES: readonly LlmServerFrameType[] = ['status', 'llm_response', 'tool_call', 'tool_callback', 'tools_registered', 'error', 'pong'];

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
