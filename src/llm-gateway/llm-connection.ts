import { PendingReplies } from '../core/requests/pending-replies';
import type { GatewayConnection } from '../core/ws/connection';
import type { ArgumentsValidator } from '../core/tools/json-schema';
import type { ToolCallContext } from '../core/tools/tool-definition';
import type { DeviceTool } from '../fleet/device-entry';
import type { ToolResultFrame } from './protocol';
import type { Turn } from './turn';

/** Requests a connection may have waiting behind the one being processed. */
export const MAX_WAITING_REQUESTS = 8;

/**
 * What the LLM gateway keeps per connection: the session it speaks in, its preferences, and
 * the device tool calls it owes an answer to. Turns and session changes run in the
 * connection's serial queue, one at a time in arrival order, so a second `text_input` waits
 * for the first answer; `tool_result`, `register_tools` and `ping` are handled at once, since a
 * waiting turn may depend on them.
 */
/** A tool the device offers agents, with the check of its arguments compiled once for its model and for agents. */
export interface AgentTool {
  tool: DeviceTool;
  validate: ArgumentsValidator;
}

/** A question waiting for the user's spoken answer. */
export interface PendingQuestion {
  answer(words: string): void;
}

/** How a device runs one of its tools, for a protocol that calls them its own way (xiaozhi's device MCP) rather than by `tool_callback`. */
export type DeviceToolRunner = (toolName: string, args: Record<string, unknown>, context: ToolCallContext) => Promise<unknown>;

export class LlmConnectionState {
  sessionId = '';
  /** Cleaning for speech, on unless the client turned it off with `configure`. */
  cleanResponses = true;
  /** Sentences as they are ready (`configure {stream}`, `LLM_STREAM_DEFAULT`). */
  stream: boolean;
  /** A `text_input` during a turn cancels it (`configure {barge_in}`). */
  bargeIn = false;
  /** The device it named at its upgrade (`Device-Id`), if any. */
  deviceId?: string;
  /** Whether session changes are told to the client (`status connected`); a protocol without those words (xiaozhi) turns it off. */
  announcesSessions = true;
  /** How the device runs its tools; `tool_callback` frames when unset. */
  toolRunner?: DeviceToolRunner;
  /** A question a turn asked the user aloud (an upstream's elicitation): the next `text_input` answers it. */
  question?: PendingQuestion;
  // The maps are made on first use: an empty Map is 184 bytes, and most connections of a fleet
  // sit idle with none of them used.
  private callbackReplies?: PendingReplies<ToolResultFrame>;
  private agentToolMap?: Map<string, AgentTool>;
  private turnMap?: Map<string, Turn>;

  constructor(streamByDefault: boolean) {
    this.stream = streamByDefault;
  }

  /** The `tool_callback`s sent to the device and not yet answered, by `call_id`. */
  get callbacks(): PendingReplies<ToolResultFrame> {
    return (this.callbackReplies ??= new PendingReplies());
  }

  /** The tools it offers agents of the fleet (`visibility` `agents` or `both`), by name. */
  get agentTools(): Map<string, AgentTool> {
    return (this.agentToolMap ??= new Map());
  }

  /** The turns running or waiting, by id, in arrival order. */
  get turns(): Map<string, Turn> {
    return (this.turnMap ??= new Map());
  }

  /** The tools it offers agents, without making the map for a device that offers none. */
  agentToolList(): DeviceTool[] {
    return this.agentToolMap ? [...this.agentToolMap.values()].map(({ tool }) => tool) : [];
  }
}

export type LlmConnection = GatewayConnection<LlmConnectionState>;
