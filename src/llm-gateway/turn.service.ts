import { Inject, Injectable } from '@nestjs/common';
import { GATEWAY_CONFIG, GatewayConfig } from '../config/gateway-config';
import { GatewayError, GatewayErrorCode } from '../core/errors/gateway-error';
import type { TextInputFrame, TurnToolCall } from '../core/llm-contract';
import { LlmService, LlmToolCall, ToolResultMessage } from '../core/llm/llm.service';
import { SystemPromptService } from '../core/llm/system-prompt.service';
import type { Session } from '../core/session/session';
import { SessionService } from '../core/session/session.service';
import { cleanForSpeech } from '../core/speech/clean-for-speech';
import { textOfContent } from '../core/tools/tool-content';
import type { ToolOutcome } from '../core/tools/tool-definition';
import type { PreparedToolCall } from '../core/tools/tool-invoker';
import { ToolRegistryService } from '../core/tools/tool-registry.service';
import type { LlmConnection } from './llm-connection';
import { llmCodeOfToolFailure, llmErrorFrame } from './llm-gateway.errors';
import { llmResponseFrame, statusFrame, toolCallFrame } from './llm-gateway.frames';
import { toLlmTool } from './llm-gateway.mapper';
import { SessionBindingService } from './session-binding.service';

/** One tool call of the model's, looked up and checked once. */
interface PlannedCall {
  call: LlmToolCall;
  /** The parsed arguments; `undefined` when the model wrote something that is not a JSON object. */
  args?: Record<string, unknown>;
  prepared?: PreparedToolCall;
  /** Runs on the device, through `tool_callback`. */
  onDevice: boolean;
}

/** A call that reaches its handler: its arguments are an object and the catalogue accepted them. */
const runs = (call: PlannedCall): boolean => call.prepared !== undefined && call.prepared.problem === undefined;

/** How a tool result reads to the model: the text of its content blocks when it made some, else its value. */
function resultForModel(outcome: ToolOutcome): string {
  if (outcome.ok && outcome.content) return textOfContent(outcome.content);
  if (outcome.ok) return typeof outcome.value === 'string' ? outcome.value : JSON.stringify(outcome.value ?? null);
  return JSON.stringify({ error: { code: llmCodeOfToolFailure(outcome.code), message: outcome.message } });
}

/**
 * One turn of an LLM-gateway connection (spec 4.1, 7.4-7.7, 9.1-9.8): what the user said goes
 * to the model with the session's context and every tool the connection may use; the model's
 * tool calls run, each round's together, on the server or on the device; their results go back
 * until the model answers; it all goes out as the spec's frames. A turn always ends with
 * `status: idle`, after its `llm_response` or its `error`, and leaves the connection ready for
 * the next one.
 */
@Injectable()
export class TurnService {
  constructor(
    private readonly llm: LlmService,
    private readonly sessions: SessionService,
    private readonly binding: SessionBindingService,
    private readonly prompts: SystemPromptService,
    private readonly registry: ToolRegistryService,
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
  ) {}

  async run(connection: LlmConnection, input: TextInputFrame, signal: AbortSignal): Promise<void> {
    connection.send(statusFrame('processing', { message: 'Processing your request...' }));
    try {
      if (input.session_id !== undefined && input.session_id !== connection.state.sessionId) {
        await this.binding.switchTo(connection, input.session_id);
      }
      await this.answer(connection, await this.binding.current(connection), input.text.trim(), signal);
    } catch (error) {
      if (signal.aborted) return;
      connection.send(llmErrorFrame(error));
    }
    connection.send(statusFrame('idle', { session_id: connection.state.sessionId }));
  }

  private async answer(connection: LlmConnection, session: Session, text: string, signal: AbortSignal): Promise<void> {
    const toolCalls: TurnToolCall[] = [];
    const history = session.settings.enableContext ? session.history : [];
    const { answer } = await this.llm.converse({
      systemPrompt: async () => this.prompts.build((await this.sessions.require(session.id)).settings),
      messages: [...history, { role: 'user', content: text }],
      tools: this.registry.list(connection.id).map(toLlmTool),
      temperature: session.settings.temperature,
      maxTokens: session.settings.maxTokens,
      signal,
      runTools: (calls) => this.runTools(connection, session.id, calls, toolCalls, signal),
    });
    await this.sessions.recordExchange(session.id, text, answer);
    connection.send(llmResponseFrame(connection.state.cleanResponses ? cleanForSpeech(answer) : answer, toolCalls));
  }

  /**
   * One round of tool calls, all at once. Calls the server resolves (server tools, and calls
   * that cannot run) are announced with `tool_call`; calls for the device go out as
   * `tool_callback` after `waiting_for_tools`. A device that does not answer in time ends the
   * turn with TOOL_RESULT_TIMEOUT (spec 9.8); any other failure is the model's to read.
   */
  private async runTools(
    connection: LlmConnection,
    sessionId: string,
    calls: LlmToolCall[],
    record: TurnToolCall[],
    signal: AbortSignal,
  ): Promise<ToolResultMessage[]> {
    const planned = calls.map((call) => this.plan(connection, call));
    const toDevice = planned.filter((call) => call.onDevice && runs(call)).length;
    if (toDevice > 0) connection.send(statusFrame('waiting_for_tools', { pending_tools: toDevice }));
    const round = new AbortController();
    const stopRound = () => round.abort(signal.reason);
    signal.addEventListener('abort', stopRound, { once: true });
    try {
      return await Promise.all(
        planned.map(async (call): Promise<ToolResultMessage> => {
          const outcome = await this.execute(connection, sessionId, call, round.signal);
          const reachedDevice = call.onDevice && runs(call);
          if (reachedDevice && !outcome.ok && outcome.code === 'TOOL_TIMEOUT') {
            const seconds = this.config.clientTools.timeoutMs / 1000;
            throw new GatewayError(GatewayErrorCode.TOOL_RESULT_TIMEOUT, 'Tool execution timeout', `No tool_result for "${call.call.name}" within ${seconds} s`);
          }
          if (!reachedDevice) {
            connection.send(
              toolCallFrame({
                tool_name: call.call.name,
                arguments: call.args ?? call.call.arguments,
                result: outcome.ok ? outcome.value : { error: { code: llmCodeOfToolFailure(outcome.code), message: outcome.message } },
                success: outcome.ok,
                duration_ms: Math.round(outcome.durationMs * 10) / 10,
              }),
            );
          }
          record.push({
            call_id: call.call.id,
            name: call.call.name,
            arguments: call.args ?? call.call.arguments,
            location: call.onDevice ? 'client' : 'server',
            success: outcome.ok,
          });
          return { callId: call.call.id, content: resultForModel(outcome) };
        }),
      );
    } catch (error) {
      round.abort(error);
      throw error;
    } finally {
      signal.removeEventListener('abort', stopRound);
    }
  }

  /** Reads the model's arguments and looks the call up as the connection sees the catalogue, checking them once. */
  private plan(connection: LlmConnection, call: LlmToolCall): PlannedCall {
    const onDevice = this.registry.get(call.name, connection.id)?.source === `client:${connection.id}`;
    let args: Record<string, unknown> | undefined;
    try {
      const parsed: unknown = call.arguments.trim() === '' ? {} : JSON.parse(call.arguments);
      if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) args = parsed as Record<string, unknown>;
    } catch {
      // reported as INVALID_TOOL_PARAMETERS when the call runs
    }
    if (args === undefined) return { call, onDevice };
    return { call, args, onDevice, prepared: this.registry.prepare(call.name, args, connection.id) };
  }

  private async execute(connection: LlmConnection, sessionId: string, call: PlannedCall, signal: AbortSignal): Promise<ToolOutcome> {
    if (!call.prepared) {
      return { ok: false, code: 'INVALID_TOOL_PARAMETERS', message: `Arguments for "${call.call.name}" are not a JSON object`, durationMs: 0 };
    }
    return this.registry.run(call.prepared, { connectionId: connection.id, principal: connection.principal, sessionId, signal });
  }
}
