import { Inject, Injectable, Logger } from '@nestjs/common';
import { GATEWAY_CONFIG, GatewayConfig } from '../config/gateway-config';
import { GatewayError, GatewayErrorCode } from '../core/errors/gateway-error';
import { LlmService, LlmToolCall, ToolResultMessage } from '../core/llm/llm.service';
import { SystemPromptService } from '../core/llm/system-prompt.service';
import type { Session } from '../core/session/session';
import { SessionService } from '../core/session/session.service';
import { textOfContent } from '../core/tools/tool-content';
import type { ToolDefinition, ToolOutcome } from '../core/tools/tool-definition';
import { ToolRegistryService } from '../core/tools/tool-registry.service';
import type { ConfigureDto, TextInputDto } from './dto/client-messages.dto';
import type { Emit, LlmConnection } from './llm-connection';
import { errorFrame, llmResponseFrame, statusFrame, toolCallFrame, TurnToolCall } from './llm-gateway.frames';
import { describeLlmError, llmCodeOfToolFailure, toLlmTool } from './llm-gateway.mapper';

interface PreparedCall {
  call: LlmToolCall;
  /** The parsed arguments; `undefined` when the model wrote invalid JSON. */
  args?: Record<string, unknown>;
  tool?: ToolDefinition;
  /** Runs on the device, through `tool_callback`. */
  onDevice: boolean;
  /** Why the call cannot run at all (bad JSON, unknown tool, arguments against the schema). */
  problem?: string;
}

/** How a tool result reads to the model: the text of its content blocks when it made some, else its value. */
function resultForModel(outcome: ToolOutcome): string {
  if (outcome.ok && outcome.content) return textOfContent(outcome.content);
  if (outcome.ok) return typeof outcome.value === 'string' ? outcome.value : JSON.stringify(outcome.value ?? null);
  return JSON.stringify({ error: { code: llmCodeOfToolFailure(outcome.code), message: outcome.message } });
}

/**
 * What an LLM-gateway connection does, request by request: sessions (open, resume, configure,
 * end) and turns. A turn sends what the user said to the model with the session's context and
 * every tool the connection may use; runs the model's tool calls, each round's together, on the
 * server or on the device; feeds the results back until the model answers; and reports it all
 * as the spec's frames. A turn always ends with `status: idle`, after its `llm_response` or its
 * `error`, and leaves the connection ready for the next one.
 */
@Injectable()
export class ConversationService {
  private readonly logger = new Logger('Conversation');

  constructor(
    private readonly llm: LlmService,
    private readonly sessions: SessionService,
    private readonly prompts: SystemPromptService,
    private readonly registry: ToolRegistryService,
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
  ) {}

  /** Gives a new connection its session and announces it (`status: connected`, spec 2.3). */
  async open(connection: LlmConnection): Promise<void> {
    const session = await this.sessions.create(connection.principal);
    this.adopt(connection, session.id);
    connection.send(statusFrame('connected', { session_id: session.id }));
  }

  /** Releases the connection's session, which stays resumable until it times out. */
  close(connection: LlmConnection): void {
    if (connection.sessionId) this.sessions.detach(connection.sessionId, connection.id);
  }

  async turn(connection: LlmConnection, input: TextInputDto, emit: Emit, signal: AbortSignal): Promise<void> {
    emit(statusFrame('processing', { message: 'Processing your request...' }));
    try {
      if (input.session_id !== undefined && input.session_id !== connection.sessionId) {
        await this.switchTo(connection, input.session_id);
      }
      const session = await this.sessions.require(connection.sessionId);
      await this.answer(connection, session, input.text, emit, signal);
    } catch (error) {
      if (signal.aborted) return;
      const { code, message, details } = describeLlmError(error, this.logger);
      emit(errorFrame(code, message, details));
    }
    emit(statusFrame('idle', { session_id: connection.sessionId }));
  }

  /** Applies `configure` to the session (and the connection's cleaning switch); no answer on success. */
  async configure(connection: LlmConnection, settings: ConfigureDto): Promise<void> {
    if (settings.clean_response !== undefined) connection.cleanResponses = settings.clean_response;
    const patch = {
      ...(settings.temperature !== undefined && { temperature: settings.temperature }),
      ...(settings.max_tokens !== undefined && { maxTokens: settings.max_tokens }),
      ...(settings.enable_context !== undefined && { enableContext: settings.enable_context }),
      ...(settings.language !== undefined && { language: settings.language }),
    };
    if (Object.keys(patch).length > 0) await this.sessions.configure(connection.sessionId, patch);
  }

  /** `start_session`: resumes `sessionId` (spec 9.6), or starts a new session without one. */
  async startSession(connection: LlmConnection, sessionId: string | undefined, emit: Emit): Promise<void> {
    if (sessionId === undefined) {
      const session = await this.sessions.create(connection.principal);
      await this.leaveCurrent(connection);
      this.adopt(connection, session.id);
    } else if (sessionId !== connection.sessionId) {
      await this.switchTo(connection, sessionId);
    }
    emit(statusFrame('connected', { session_id: connection.sessionId }));
  }

  /** `end_session`: deletes the session and gives the connection a new one, announcing both. */
  async endSession(connection: LlmConnection, emit: Emit): Promise<void> {
    const ended = connection.sessionId;
    await this.sessions.end(ended);
    emit(statusFrame('idle', { message: 'Session ended', session_id: ended }));
    const session = await this.sessions.create(connection.principal);
    this.adopt(connection, session.id);
    emit(statusFrame('connected', { session_id: session.id }));
  }

  private async answer(connection: LlmConnection, session: Session, text: string, emit: Emit, signal: AbortSignal): Promise<void> {
    const toolCalls: TurnToolCall[] = [];
    const history = session.settings.enableContext ? session.history : [];
    const { answer } = await this.llm.converse({
      systemPrompt: async () => this.prompts.build((await this.sessions.require(session.id)).settings),
      messages: [...history, { role: 'user', content: text }],
      tools: this.registry.list(connection.id).map(toLlmTool),
      temperature: session.settings.temperature,
      maxTokens: session.settings.maxTokens,
      signal,
      runTools: (calls) => this.runTools(connection, session.id, calls, toolCalls, emit, signal),
    });
    await this.sessions.recordExchange(session.id, text, answer);
    emit(llmResponseFrame(answer, toolCalls));
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
    emit: Emit,
    signal: AbortSignal,
  ): Promise<ToolResultMessage[]> {
    const prepared = calls.map((call) => this.prepare(connection, call));
    const toDevice = prepared.filter((call) => call.onDevice && call.problem === undefined).length;
    if (toDevice > 0) emit(statusFrame('waiting_for_tools', { pending_tools: toDevice }));

    const round = new AbortController();
    const stopRound = () => round.abort(signal.reason);
    signal.addEventListener('abort', stopRound, { once: true });
    try {
      return await Promise.all(
        prepared.map(async (call): Promise<ToolResultMessage> => {
          const outcome = await this.execute(connection, sessionId, call, round.signal);
          const reachedDevice = call.onDevice && call.problem === undefined;
          if (reachedDevice && !outcome.ok && outcome.code === 'TOOL_TIMEOUT') {
            const seconds = this.config.clientTools.timeoutMs / 1000;
            throw new GatewayError(
              GatewayErrorCode.TOOL_RESULT_TIMEOUT,
              'Tool execution timeout',
              `No tool_result for "${call.call.name}" within ${seconds} s`,
            );
          }
          if (!reachedDevice) {
            emit(
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

  private prepare(connection: LlmConnection, call: LlmToolCall): PreparedCall {
    const tool = this.registry.get(call.name, connection.id);
    const onDevice = tool?.source === `client:${connection.id}`;
    let args: Record<string, unknown> | undefined;
    try {
      const parsed: unknown = call.arguments.trim() === '' ? {} : JSON.parse(call.arguments);
      if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) args = parsed as Record<string, unknown>;
    } catch {
      // reported below as INVALID_TOOL_PARAMETERS
    }
    if (args === undefined) return { call, tool, onDevice, problem: `Arguments for "${call.name}" are not a JSON object` };
    if (!tool) return { call, args, tool, onDevice, problem: `Unknown tool "${call.name}"` };
    const problem = this.registry.validateArguments(call.name, args, connection.id);
    return { call, args, tool, onDevice, problem: problem && `Invalid arguments for tool "${call.name}": ${problem}` };
  }

  private async execute(connection: LlmConnection, sessionId: string, call: PreparedCall, signal: AbortSignal): Promise<ToolOutcome> {
    if (call.args === undefined) {
      return { ok: false, code: 'INVALID_TOOL_PARAMETERS', message: call.problem!, durationMs: 0 };
    }
    return this.registry.call(call.call.name, call.args, {
      connectionId: connection.id,
      principal: connection.principal,
      sessionId,
      signal,
    });
  }

  /** Resumes `sessionId` on this connection (SESSION_ERROR when it cannot be). */
  private async switchTo(connection: LlmConnection, sessionId: string): Promise<void> {
    const session = await this.sessions.resume(sessionId, connection.principal);
    await this.leaveCurrent(connection);
    this.adopt(connection, session.id);
  }

  /** Detaches the current session; one that never held a message is deleted rather than left to expire. */
  private async leaveCurrent(connection: LlmConnection): Promise<void> {
    const current = connection.sessionId;
    if (!current) return;
    this.sessions.detach(current, connection.id);
    const session = await this.sessions.require(current).catch(() => undefined);
    if (session && session.history.length === 0) await this.sessions.end(current);
  }

  /** Makes `sessionId` the connection's; if another connection resumes it later, this one moves to a fresh session. */
  private adopt(connection: LlmConnection, sessionId: string): void {
    connection.sessionId = sessionId;
    this.sessions.attach(sessionId, connection.id, () => void this.moveOn(connection, sessionId));
  }

  private async moveOn(connection: LlmConnection, takenSessionId: string): Promise<void> {
    try {
      const session = await this.sessions.create(connection.principal);
      this.adopt(connection, session.id);
      connection.send(statusFrame('connected', { session_id: session.id, previous_session_id: takenSessionId, reason: 'session_resumed_elsewhere' }));
    } catch (error) {
      this.logger.warn(`Could not give connection ${connection.id} a new session: ${(error as Error).message}`);
    }
  }
}
