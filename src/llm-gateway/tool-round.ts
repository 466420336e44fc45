import type { LlmToolCall, ToolResultMessage } from '../assistant/llm/llm.service';
import { GatewayError, GatewayErrorCode } from '../core/errors/gateway-error';
import type { ToolCallScope } from '../core/tools/tool-call-scope';
import type { ToolCallService } from '../core/tools/tool-call.service';
import type { ToolCaller } from '../core/tools/tool-definition';
import type { PreparedToolCall } from '../core/tools/tool-invoker';
import { FRAME_MAX_DEPTH, withinDepth } from '../core/validation/frame-schema';
import { statusFrame, toolCallFrame } from './llm-gateway.frames';
import type { TurnToolCall } from './protocol';
import { resultEcho, resultForModel } from './tool-result-text';

/** One tool call of the model's, looked up and its arguments checked once. */
interface PlannedCall {
  call: LlmToolCall;
  /** The parsed arguments; `undefined` when the model wrote something that is not a JSON object, or nested too deep. */
  args?: Record<string, unknown>;
  prepared: PreparedToolCall;
  /** Runs on the device, through `tool_callback`. */
  onDevice: boolean;
}

export interface ToolRoundSettings {
  /** `CLIENT_TOOL_TIMEOUT`, for the device's missing answer. */
  clientToolTimeoutMs: number;
  /** `LLM_MAX_TOOL_RESULT_CHARS`: what the model reads of one result. */
  maxResultChars: number;
  /** `LLM_TOOL_CALL_ECHO_CHARS`: what a `tool_call` frame echoes of one. */
  echoChars: number;
}

/**
 * One round of the model's tool calls in a turn, all at once (spec 7.4-7.6). Calls the server
 * resolves (server tools, and calls that cannot run) are announced with `tool_call`; calls for
 * the device go out as `tool_callback` after `waiting_for_tools`. A device that does not answer
 * in time ends the turn with TOOL_RESULT_TIMEOUT (spec 9.8); any other failure is the model's to
 * read, as the tool's result `{"error": {"code", "message"}}`.
 */
export class ToolRound {
  private readonly planned: PlannedCall[];

  constructor(
    calls: LlmToolCall[],
    private readonly tools: ToolCallService,
    private readonly scope: ToolCallScope,
    /** Whether `name` is one of the connection's own device tools. */
    private readonly onDevice: (name: string) => boolean,
    private readonly settings: ToolRoundSettings,
    /** What the tools may ask of the turn while they run (an upstream's sampling or elicitation). */
    private readonly caller?: ToolCaller,
  ) {
    this.planned = calls.map((call) => this.plan(call));
  }

  /** Calls that go to the device (their arguments passed the device's schema). */
  get toDevice(): number {
    return this.planned.filter((call) => call.onDevice && call.prepared.problem === undefined).length;
  }

  /**
   * Runs every call; `send` gets the round's frames, `record` each call as the final answer lists
   * it. Resolves with the results for the model, in the calls' order.
   */
  async run(send: (frame: { turn_id?: string }) => void, record: TurnToolCall[]): Promise<ToolResultMessage[]> {
    if (this.toDevice > 0) send(statusFrame('waiting_for_tools', { pending_tools: this.toDevice }));
    return Promise.all(this.planned.map((call) => this.runOne(call, send, record)));
  }

  private async runOne(call: PlannedCall, send: (frame: { turn_id?: string }) => void, record: TurnToolCall[]): Promise<ToolResultMessage> {
    const outcome = await this.tools.run(this.scope, call.prepared, this.caller && { caller: this.caller });
    const reachedDevice = call.onDevice && call.prepared.problem === undefined;
    if (reachedDevice && !outcome.ok && outcome.code === 'TOOL_TIMEOUT') {
      const seconds = this.settings.clientToolTimeoutMs / 1000;
      throw new GatewayError(GatewayErrorCode.TOOL_RESULT_TIMEOUT, 'Tool execution timeout', `No tool_result for "${call.call.name}" within ${seconds} s`);
    }
    const args = call.args ?? call.call.arguments;
    if (!reachedDevice) {
      send(
        toolCallFrame({
          tool_name: call.call.name,
          arguments: args,
          ...resultEcho(outcome, this.settings.echoChars),
          success: outcome.ok,
          duration_ms: Math.round(outcome.durationMs * 10) / 10,
        }),
      );
    }
    record.push({ call_id: call.call.id, name: call.call.name, arguments: args, location: call.onDevice ? 'client' : 'server', success: outcome.ok });
    return { callId: call.call.id, content: resultForModel(outcome, this.settings.maxResultChars) };
  }

  /**
   * Reads the model's arguments and looks the call up as the connection sees the catalogue,
   * checking them once. Arguments that are not a JSON object, or nest past the frame depth, are
   * kept as the model's text (as a value they could not be put in a frame) and fail the call
   * through the invoker, so it is audited and traced like any other.
   */
  private plan(call: LlmToolCall): PlannedCall {
    const onDevice = this.onDevice(call.name);
    let args: Record<string, unknown> | undefined;
    try {
      const parsed: unknown = call.arguments.trim() === '' ? {} : JSON.parse(call.arguments);
      if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) args = parsed as Record<string, unknown>;
    } catch {
      // failed below, as arguments that are not a JSON object
    }
    if (args !== undefined && !withinDepth(args, FRAME_MAX_DEPTH)) {
      return this.refused(call, onDevice, `Arguments for "${call.name}" nest deeper than ${FRAME_MAX_DEPTH} levels`);
    }
    if (args === undefined) return this.refused(call, onDevice, `Arguments for "${call.name}" are not a JSON object`);
    return { call, args, onDevice, prepared: this.tools.prepare(this.scope, call.name, args) };
  }

  private refused(call: LlmToolCall, onDevice: boolean, message: string): PlannedCall {
    return { call, onDevice, prepared: { name: call.name, args: call.arguments, problem: { code: 'INVALID_TOOL_PARAMETERS', message } } };
  }
}
