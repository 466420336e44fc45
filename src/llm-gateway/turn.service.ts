import { Inject, Injectable, Optional } from '@nestjs/common';
import type { Span } from '@opentelemetry/api';
import { GATEWAY_CONFIG, GatewayConfig } from '../config/gateway-config';
import { AuditService } from '../core/audit/audit.service';
import { GatewayError, GatewayErrorCode } from '../core/errors/gateway-error';
import type { LlmResponseFrame, TextInputFrame, TurnToolCall } from './protocol';
import { AccessTokenService } from '../core/auth/access-token.service';
import { AccessDeniedError } from '../core/auth/access-denied.error';
import { RateLimitService } from '../core/limits/rate-limit.service';
import { LlmService, LlmToolCall, ToolResultMessage } from '../assistant/llm/llm.service';
import { SystemPromptService } from '../assistant/llm/system-prompt.service';
import type { Session } from '../assistant/session/session';
import { SessionService } from '../assistant/session/session.service';
import { cleanForSpeech } from '../assistant/speech/clean-for-speech';
import { languageOfText } from '../assistant/speech/spoken-forms';
import type { ToolOutcome } from '../core/tools/tool-definition';
import type { PreparedToolCall } from '../core/tools/tool-invoker';
import { ToolRegistryService } from '../core/tools/tool-registry.service';
import { FRAME_MAX_DEPTH, withinDepth } from '../core/validation/frame-schema';
import { endSpan, TracingService } from '../core/tracing/tracing.service';
import { MetricsService } from '../metrics/metrics.service';
import { FILLERS } from './fillers';
import type { LlmConnection } from './llm-connection';
import { llmErrorFrame } from './llm-gateway.errors';
import { llmResponseFrame, partialResponseFrame, statusFrame, toolCallFrame } from './llm-gateway.frames';
import { toLlmTool } from './llm-gateway.mapper';
import { SessionBindingService } from './session-binding.service';
import { SpeechStream } from './speech-stream';
import { resultEcho, resultForModel } from './tool-result-text';
import { Turn } from './turn';

/** One tool call of the model's, looked up and checked once. */
interface PlannedCall {
  call: LlmToolCall;
  /** The parsed arguments; `undefined` when the model wrote something that is not a JSON object, or nested too deep. */
  args?: Record<string, unknown>;
  /** Why the arguments cannot be used as a value, when it is not that they are no JSON object. */
  problem?: string;
  prepared?: PreparedToolCall;
  /** Runs on the device, through `tool_callback`. */
  onDevice: boolean;
}

/** A call that reaches its handler: its arguments are an object and the catalogue accepted them. */
const runs = (call: PlannedCall): boolean => call.prepared !== undefined && call.prepared.problem === undefined;

/**
 * One turn of an LLM-gateway connection (spec 4.1, 7.4-7.7, 9.1-9.8): what the user said goes
 * to the model with the session's context and every tool the connection may use; the model's
 * text is spoken sentence by sentence as it is written (when the connection streams); its tool
 * calls run, each round's together, on the server or on the device; their results go back
 * until the model answers. A turn always ends with `status: idle`, after its `llm_response`,
 * its `error`, or its `status: cancelled`, and leaves the connection ready for the next one.
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
    private readonly audit: AuditService,
    private readonly tracing: TracingService,
    private readonly tokens: AccessTokenService,
    private readonly limits: RateLimitService,
    @Optional() private readonly metrics?: MetricsService,
  ) {}

  async run(connection: LlmConnection, turn: Turn, input: TextInputFrame): Promise<void> {
    turn.started = true;
    const stopWithConnection = connection.onClose(() => turn.abort(new Error('Connection closed')));
    const span = this.tracing.startTurn(turn.id, connection.principal, connection.state.sessionId);
    let failure: string | undefined;
    let answer: { turn_id?: string } | undefined;
    try {
      if (!turn.cancelled) failure = await this.tracing.within(span, () => this.answerOrFail(connection, turn, input));
      const idle = statusFrame('idle', { session_id: connection.state.sessionId });
      answer = turn.takeHeld();
      if (turn.cancelled) turn.end(statusFrame('cancelled', { turn_id: turn.id }), idle);
      else turn.end(...(answer ? [answer] : []), idle);
      this.recordTurn(turn);
    } finally {
      stopWithConnection();
      connection.state.turns.delete(turn.id);
      this.auditTurn(connection, turn, input, failure, (answer as LlmResponseFrame | undefined)?.content, span);
    }
  }

  /** The turn's audit line and the end of its span. */
  private auditTurn(connection: LlmConnection, turn: Turn, input: TextInputFrame, failure?: string, answer?: string, span?: Span): void {
    const outcome = turn.answered && !turn.cancelled ? 'ok' : turn.cancelled ? 'cancelled' : (failure ?? 'aborted');
    endSpan(span, outcome, outcome === 'ok' || outcome === 'cancelled' ? undefined : { code: outcome });
    this.audit.turn({
      principal: connection.principal,
      turnId: turn.id,
      sessionId: connection.state.sessionId,
      outcome,
      durationMs: performance.now() - turn.arrivedAt,
      toolCalls: turn.toolCalls,
      input: input.text,
      answer,
    });
  }

  /** Answers the turn, or sends its error frame; the code of that error, if it sent one. */
  private async answerOrFail(connection: LlmConnection, turn: Turn, input: TextInputFrame): Promise<string | undefined> {
    turn.send(statusFrame('processing', { message: 'Processing your request...' }));
    const text = input.text.trim();
    let session: Session | undefined;
    try {
      await this.admit(connection);
      if (input.session_id !== undefined && input.session_id !== connection.state.sessionId) {
        await this.binding.switchTo(connection, input.session_id);
      }
      session = await this.binding.current(connection);
      await this.answer(connection, turn, session, text);
    } catch (error) {
      if (turn.cancelled && session) await this.keepWhatWasSpoken(connection, turn, session.id, text);
      else if (!turn.signal.aborted) {
        const frame = llmErrorFrame(error);
        this.metrics?.errorAnswered('llm', frame.code);
        turn.send(frame);
        return frame.code;
      }
    }
    return undefined;
  }

  private recordTurn(turn: Turn): void {
    if (!this.metrics) return;
    const { arrivedAt, firstSentenceAt } = turn;
    const outcome = turn.cancelled ? 'cancelled' : turn.answered ? 'answered' : 'failed';
    this.metrics.turnEnded(outcome, performance.now() - arrivedAt, turn.answered && firstSentenceAt !== undefined ? firstSentenceAt - arrivedAt : undefined);
  }

  private async answer(connection: LlmConnection, turn: Turn, session: Session, text: string): Promise<void> {
    const { settings } = session;
    const { stream, cleanResponses } = connection.state;
    const language = settings.language ?? languageOfText(text);
    const speech = stream
      ? new SpeechStream(language, cleanResponses, (sentence) => {
          turn.firstSentenceAt ??= performance.now();
          turn.send(partialResponseFrame(sentence, turn.seq++));
        })
      : undefined;
    turn.language = language;
    turn.speech = speech;
    const toolCalls: TurnToolCall[] = [];
    const { answer } = await this.llm.converse({
      systemPrompt: this.systemPromptOf(session),
      messages: [...(settings.enableContext ? session.history : []), { role: 'user', content: text }],
      tools: this.registry.list(connection.id, connection.principal).map(toLlmTool),
      temperature: settings.temperature,
      maxTokens: settings.maxTokens,
      signal: turn.signal,
      onText: (delta) => {
        turn.firstTokenAt ??= performance.now();
        turn.writtenLength += delta.length;
        speech?.write(delta);
      },
      onReplyEnd: (durationMs) => {
        turn.llmMs += durationMs;
        speech?.flush();
      },
      runTools: (calls) => this.runTools(connection, turn, session.id, calls, toolCalls),
    });
    if (turn.cancelled) throw turn.signal.reason;
    const historySaved = await this.keepExchange(session.id, text, answer);
    const content = speech ? speech.spoken : cleanResponses ? cleanForSpeech(answer, language) : answer;
    turn.firstSentenceAt ??= performance.now();
    turn.hold(llmResponseFrame(content, toolCalls, turn.timing(), historySaved));
    turn.answered = true;
  }

  /**
   * Keeps the exchange in the session's history; false when it could not be (the store failed,
   * or the session is gone). The answer is the client's either way: the model has finished, so
   * the answer goes out, saying that the history does not hold it.
   */
  private keepExchange(sessionId: string, text: string, answer: string): Promise<boolean> {
    return this.sessions.recordExchange(sessionId, text, answer).catch(() => false);
  }

  /** Whether the connection's token may hold this turn now: `llm: false` refuses it, `turns_per_minute` counts it. */
  private async admit(connection: LlmConnection): Promise<void> {
    const grant = this.tokens.grantOf(connection.principal);
    if (!grant.llm) {
      const who = grant.name === undefined ? 'This token' : `Token "${grant.name}"`;
      throw new AccessDeniedError(`${who} may not hold LLM-gateway turns (llm: false in the tokens file)`);
    }
    await this.limits.admitTurn(connection.principal);
  }

  /**
   * A cancelled turn's history: the user's words and, of the answer, only what the device says
   * it played, or else the sentences that were sent (OpenAI Realtime's truncate does the same).
   */
  private async keepWhatWasSpoken(connection: LlmConnection, turn: Turn, sessionId: string, text: string): Promise<void> {
    const sent = turn.speech?.spoken ?? '';
    await this.sessions.recordExchange(sessionId, text, (turn.spokenByDevice ?? sent).trim()).catch(() => undefined);
  }

  /** The system prompt, built once per turn, and again only if a tool changed the session's settings meanwhile. */
  private systemPromptOf(session: Session): () => string | Promise<string> {
    let revision = this.sessions.revision(session.id);
    let prompt = this.prompts.build(session.settings);
    return async () => {
      const now = this.sessions.revision(session.id);
      if (now !== revision) {
        revision = now;
        prompt = this.prompts.build((await this.sessions.require(session.id)).settings);
      }
      return prompt;
    };
  }

  /**
   * One round of tool calls, all at once. Calls the server resolves (server tools, and calls
   * that cannot run) are announced with `tool_call`; calls for the device go out as
   * `tool_callback` after `waiting_for_tools`. A device that does not answer in time ends the
   * turn with TOOL_RESULT_TIMEOUT (spec 9.8); any other failure is the model's to read. While a
   * streaming turn's round runs longer than `TOOL_FILLER_DELAY`, one filler sentence is said.
   */
  private async runTools(
    connection: LlmConnection,
    turn: Turn,
    sessionId: string,
    calls: LlmToolCall[],
    record: TurnToolCall[],
  ): Promise<ToolResultMessage[]> {
    const started = performance.now();
    turn.toolCalls += calls.length;
    const planned = calls.map((call) => this.plan(connection, call));
    const toDevice = planned.filter((call) => call.onDevice && runs(call)).length;
    if (toDevice > 0) turn.send(statusFrame('waiting_for_tools', { pending_tools: toDevice }));
    const filler = this.fillerTimer(turn);
    const round = new AbortController();
    const stopRound = () => round.abort(turn.signal.reason);
    turn.signal.addEventListener('abort', stopRound, { once: true });
    try {
      return await Promise.all(
        planned.map(async (call): Promise<ToolResultMessage> => {
          const outcome = await this.execute(connection, turn, sessionId, call, round.signal);
          const reachedDevice = call.onDevice && runs(call);
          if (reachedDevice && !outcome.ok && outcome.code === 'TOOL_TIMEOUT') {
            const seconds = this.config.clientTools.timeoutMs / 1000;
            throw new GatewayError(GatewayErrorCode.TOOL_RESULT_TIMEOUT, 'Tool execution timeout', `No tool_result for "${call.call.name}" within ${seconds} s`);
          }
          if (!reachedDevice) {
            turn.send(
              toolCallFrame({
                tool_name: call.call.name,
                arguments: call.args ?? call.call.arguments,
                ...resultEcho(outcome, this.config.llm.toolCallEchoChars),
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
          return { callId: call.call.id, content: resultForModel(outcome, this.config.llm.maxToolResultChars) };
        }),
      );
    } catch (error) {
      round.abort(error);
      throw error;
    } finally {
      clearTimeout(filler);
      turn.signal.removeEventListener('abort', stopRound);
      turn.toolsMs += performance.now() - started;
    }
  }

  /** Says a filler sentence if the round outlasts `TOOL_FILLER_DELAY`, once per streaming turn. */
  private fillerTimer(turn: Turn): NodeJS.Timeout | undefined {
    const delay = this.config.llm.fillerDelayMs;
    if (delay === 0 || turn.fillerSaid || !turn.speech || !turn.language) return undefined;
    const { speech, language } = turn;
    return setTimeout(() => {
      turn.fillerSaid = true;
      speech.interject(FILLERS[language]);
    }, delay);
  }

  /**
   * Reads the model's arguments and looks the call up as the connection sees the catalogue,
   * checking them once. Arguments nested past the frame depth are kept as the model's text: as
   * a value they could not be put in a frame (JSON.stringify overflows the stack on them).
   */
  private plan(connection: LlmConnection, call: LlmToolCall): PlannedCall {
    const onDevice = this.registry.get(call.name, connection.id)?.source === `client:${connection.id}`;
    let args: Record<string, unknown> | undefined;
    try {
      const parsed: unknown = call.arguments.trim() === '' ? {} : JSON.parse(call.arguments);
      if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) args = parsed as Record<string, unknown>;
    } catch {
      // reported as INVALID_TOOL_PARAMETERS when the call runs
    }
    if (args !== undefined && !withinDepth(args, FRAME_MAX_DEPTH)) {
      return { call, onDevice, problem: `Arguments for "${call.name}" nest deeper than ${FRAME_MAX_DEPTH} levels` };
    }
    if (args === undefined) return { call, onDevice };
    return { call, args, onDevice, prepared: this.registry.prepare(call.name, args, connection.id, connection.principal) };
  }

  private async execute(connection: LlmConnection, turn: Turn, sessionId: string, call: PlannedCall, signal: AbortSignal): Promise<ToolOutcome> {
    // Arguments that are not a JSON object still go through the invoker, which fails them, so the call is audited and traced.
    const prepared = call.prepared ?? {
      name: call.call.name,
      args: call.call.arguments,
      problem: { code: 'INVALID_TOOL_PARAMETERS', message: call.problem ?? `Arguments for "${call.call.name}" are not a JSON object` },
    };
    return this.registry.run(prepared, { connectionId: connection.id, principal: connection.principal, sessionId, turnId: turn.id, signal, protocol: 'llm' });
  }
}
