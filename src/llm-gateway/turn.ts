import type { Span } from '@opentelemetry/api';
import { Observable, ReplaySubject } from 'rxjs';
import type { LlmToolCall, ToolResultMessage } from '../assistant/llm/llm.service';
import type { Session } from '../assistant/session/session';
import { languageOfText } from '../assistant/speech/spoken-forms';
import { AccessDeniedError } from '../core/auth/access-denied.error';
import type { BudgetSubject, Reservation } from '../core/budgets/budget.service';
import { ToolCallScope } from '../core/tools/tool-call-scope';
import { endSpan } from '../core/tracing/tracing.service';
import { FILLERS } from './fillers';
import { turnCaller } from './turn-caller';
import type { LlmConnection } from './llm-connection';
import { llmErrorFrame } from './llm-gateway.errors';
import { llmResponseFrame, partialResponseFrame, statusFrame } from './llm-gateway.frames';
import { toLlmTool } from './llm-gateway.mapper';
import type { LanguageCode, LlmServerFrame, TextInputFrame, TurnFrame, TurnTiming, TurnToolCall } from './protocol';
import { SpeechStream } from './speech-stream';
import { ToolRound } from './tool-round';
import type { TurnEnvironment } from './turn-environment';

export interface TurnOptions {
  /** `push` for a turn the fleet started for the device (no `text_input` asked for it): every frame says so. */
  origin?: 'push';
  /**
   * For a connection that speaks the answer itself (a xiaozhi device's voice session): resolves
   * once the answer written so far has been spoken, or its speech was cut. The turn is answered
   * only then, so the device's abort while it plays still cancels it, and the history keeps only
   * what was spoken (the `spoken` its cancel brings).
   */
  untilSpoken?: () => Promise<void>;
}

/** Why a turn's signal aborted when the client cancelled it. */
export class TurnCancelled extends Error {
  constructor(readonly turnId: string) {
    super(`Turn ${turnId} was cancelled`);
    this.name = 'TurnCancelled';
  }
}

/** Characters per token, for what a model call cut short wrote (see `ModelUsage`). */
const CHARS_PER_TOKEN = 4;

const elapsed = (from: number, to: number | undefined) => (to === undefined ? null : Math.round(to - from));

/** Where a turn's time went, for the final answer's `timing`. */
class TurnClock {
  readonly arrivedAt = performance.now();
  firstTokenAt?: number;
  /** When the first sentence went out: a streaming turn's first partial, or else its final answer. */
  firstSentenceAt?: number;
  llmMs = 0;
  toolsMs = 0;

  timing(): TurnTiming {
    return {
      first_token_ms: elapsed(this.arrivedAt, this.firstTokenAt),
      first_sentence_ms: elapsed(this.arrivedAt, this.firstSentenceAt),
      total_ms: Math.round(performance.now() - this.arrivedAt),
      llm_ms: Math.round(this.llmMs),
      tools_ms: Math.round(this.toolsMs),
    };
  }
}

/**
 * One turn of an LLM-gateway connection, from its `text_input` to its `status: idle` (spec 4.1,
 * 7.4-7.7, 9.1-9.8): what the user said goes to the model with the session's context and every
 * tool the connection may use; the model's text is said sentence by sentence as it is written
 * (when the connection streams); its tool calls run, each round's together, on the server or
 * on the device; their results go back until the model answers. The turn owns its connection's
 * part in it, its session, its speech and its tool rounds, and its frames are one stream
 * ({@link frames}) that the gateway sends through its interceptors (cleaning for speech).
 *
 * It always ends with `status: idle`, after its `llm_response`, its `error`, or its
 * `status: cancelled`, and leaves the connection ready for the next one. Every frame carries its
 * id. Cancelled, it aborts its model request, tool calls and device callbacks and sends nothing
 * more but its ending.
 */
export class Turn {
  private readonly out = new ReplaySubject<LlmServerFrame>();
  private readonly controller = new AbortController();
  private readonly clock = new TurnClock();
  private cancelledWith?: { spoken?: string };
  private leaveQueue?: () => void;
  private isStarted = false;
  private isAnswered = false;
  private speech?: SpeechStream;
  private spokenLanguage?: LanguageCode;
  /** How much text the model has written (its deltas, raw). */
  private writtenLength = 0;
  private toolCallCount = 0;
  private seq = 0;
  private fillerSaid = false;
  private held?: LlmServerFrame;

  constructor(
    readonly id: string,
    private readonly connection: LlmConnection,
    private readonly input: TextInputFrame,
    private readonly env: TurnEnvironment,
    private readonly options: TurnOptions = {},
  ) {}

  /** Every frame of the turn, in order, from `processing` to `idle`; complete when the turn is over. */
  get frames(): Observable<LlmServerFrame> {
    return this.out.asObservable();
  }

  /** Whether it has begun (it waits in the connection's queue until then). */
  get started(): boolean {
    return this.isStarted;
  }

  /** Whether its final answer is decided: a cancel comes too late. */
  get answered(): boolean {
    return this.isAnswered;
  }

  get cancelled(): boolean {
    return this.cancelledWith !== undefined;
  }

  /** The language it speaks, once it knows its session. */
  get language(): LanguageCode | undefined {
    return this.spokenLanguage;
  }

  /** The longest `spoken` a cancel may bring: what the model has written so far, or said. */
  get spokenLimit(): number {
    return Math.max(this.speech?.spoken.length ?? 0, this.writtenLength);
  }

  /**
   * How the turn leaves the queue it waits in: `leave` withdraws it and ends it at once. Set by
   * whoever queued it, so a cancelled turn that never started neither holds a place in the queue
   * nor keeps its client waiting for the turns ahead of it.
   */
  whileWaiting(leave: () => void): void {
    this.leaveQueue = leave;
  }

  /**
   * Stops the turn: the model request, tools and device callbacks are aborted; nothing more of it
   * is sent but its ending. A turn still waiting for its place leaves the queue and ends now.
   */
  cancel(spoken?: string): void {
    if (this.cancelledWith) return;
    this.cancelledWith = { spoken };
    this.controller.abort(new TurnCancelled(this.id));
    if (!this.isStarted) this.leaveQueue?.();
  }

  /**
   * The turn, top to bottom: `processing`; the token admitted; the session; the conversation
   * with the model (its text said as it comes, its tool rounds run); the exchange kept in the
   * history; the answer and `idle` (or the error, or `cancelled`, and `idle`). Its audit line, its
   * trace span and its metrics, whatever the outcome.
   */
  async play(): Promise<void> {
    this.isStarted = true;
    const stopWithConnection = this.connection.onClose(() => this.controller.abort(new Error('Connection closed')));
    const span = this.env.tracing.startTurn(this.id, this.connection.principal, this.connection.state.sessionId);
    let failure: string | undefined;
    try {
      // A turn whose connection closed while it waited has nobody to answer.
      if (!this.controller.signal.aborted) failure = await this.env.tracing.within(span, () => this.answerOrFail());
      // A failed or cancelled answer's speech ends too before the next turn may speak.
      await this.options.untilSpoken?.();
      this.end();
      this.recordMetrics();
    } finally {
      stopWithConnection();
      this.connection.state.turns.delete(this.id);
      this.audit(failure, span);
      this.out.complete();
    }
  }

  /** Answers the turn, or sends its error frame; the code of that error, if it sent one. */
  private async answerOrFail(): Promise<string | undefined> {
    this.send(statusFrame('processing', { message: 'Processing your request...' }));
    const text = this.input.text.trim();
    let session: Session | undefined;
    try {
      await this.admit();
      session = await this.session();
      const budget = await this.reserveBudget(session);
      try {
        await this.converse(session, text, budget);
      } finally {
        await budget.release();
      }
    } catch (error) {
      if (this.cancelled && session) await this.keepWhatWasSpoken(session.id, text);
      else if (!this.controller.signal.aborted) {
        const frame = llmErrorFrame(error);
        this.env.metrics?.errorAnswered(this.connection.protocol, frame.code);
        this.send(frame);
        return frame.code;
      }
    }
    return undefined;
  }

  /** Whether the connection's token may hold this turn now: `llm: false` refuses it, `turns_per_minute` counts it. */
  private async admit(): Promise<void> {
    const grant = this.env.tokens.grantOf(this.connection.principal);
    if (!grant.llm) {
      const who = grant.name === undefined ? 'This token' : `Token "${grant.name}"`;
      throw new AccessDeniedError(`${who} may not hold LLM-gateway turns (llm: false in the tokens file)`);
    }
    await this.env.limits.admitTurn(this.connection.principal);
  }

  /**
   * The turn's budget, checked before the model is asked: the device's and its principal's LLM
   * tokens (and, for a connection that speaks its answers, synthesized characters) must not be
   * spent, or the turn fails with BUDGET_EXCEEDED. The session's `max_tokens` is set aside while
   * the turn runs, so turns of one principal's devices running at once count each other; the real
   * usage of each model call is charged as it ends.
   */
  private reserveBudget(session: Session): Promise<Reservation> {
    return this.env.budgets.reserve(this.budgetSubject, 'llm_tokens', session.settings.maxTokens, this.options.untilSpoken ? ['tts_chars'] : []);
  }

  private get budgetSubject(): BudgetSubject {
    return { principal: this.connection.principal, deviceId: this.connection.state.deviceId };
  }

  /** The session the turn speaks in: the one `text_input` names (resumed here), or the connection's. */
  private async session(): Promise<Session> {
    const named = this.input.session_id;
    if (named !== undefined && named !== this.connection.state.sessionId) await this.env.binding.switchTo(this.connection, named);
    return this.env.binding.current(this.connection);
  }

  /** The conversation with the model, one event at a time, until its answer; then the exchange is kept and the answer held for the ending. */
  private async converse(session: Session, text: string, budget: Reservation): Promise<void> {
    const { settings } = session;
    this.spokenLanguage = settings.language ?? languageOfText(text);
    if (this.connection.state.stream) this.speech = new SpeechStream(this.spokenLanguage, (sentence) => this.sayPartial(sentence));
    const toolCalls: TurnToolCall[] = [];
    const prompt = this.env.systemPrompt(session);
    let answer = '';
    /** What the model call in flight has written: all a call cut short (cancelled, failed) is charged, as its server reports no usage then. */
    let unchargedChars = 0;
    const conversation = this.env.llm.converse({
      systemPrompt: prompt.current,
      messages: [...(settings.enableContext ? session.history : []), { role: 'user', content: text }],
      tools: this.env.registry.list(this.connection.id, this.connection.principal).map(toLlmTool),
      temperature: settings.temperature,
      maxTokens: settings.maxTokens,
      signal: this.controller.signal,
    });
    try {
      for await (const event of conversation) {
        switch (event.type) {
          case 'text':
            this.clock.firstTokenAt ??= performance.now();
            this.writtenLength += event.delta.length;
            unchargedChars += event.delta.length;
            this.speech?.write(event.delta);
            break;
          case 'reply-end':
            this.clock.llmMs += event.durationMs;
            unchargedChars = 0;
            await budget.charge(event.usage.tokens);
            this.speech?.flush();
            break;
          case 'tool-round':
            event.continueWith(await this.runToolRound(session, event.calls, toolCalls), await prompt.ifChanged());
            break;
          case 'answer':
            answer = event.text;
            break;
        }
      }
    } finally {
      if (unchargedChars > 0) await budget.charge(Math.ceil(unchargedChars / CHARS_PER_TOKEN));
    }
    await this.options.untilSpoken?.();
    if (this.cancelled) throw this.controller.signal.reason;
    const historySaved = await this.env.sessions.recordExchange(session.id, text, answer).catch(() => false);
    this.clock.firstSentenceAt ??= performance.now();
    this.held = llmResponseFrame(this.speech ? this.speech.spoken : answer, toolCalls, this.clock.timing(), historySaved);
    this.isAnswered = true;
  }

  /** One round of the model's tool calls; a streaming turn says a filler sentence, once, if the round outlasts `TOOL_FILLER_DELAY`. */
  private async runToolRound(session: Session, calls: LlmToolCall[], record: TurnToolCall[]): Promise<ToolResultMessage[]> {
    const started = performance.now();
    this.toolCallCount += calls.length;
    const round = new AbortController();
    const stopRound = () => round.abort(this.controller.signal.reason);
    this.controller.signal.addEventListener('abort', stopRound, { once: true });
    const scope = ToolCallScope.ofTurn(this.connection, { sessionId: session.id, turnId: this.id, signal: round.signal });
    const { clientTools, llm } = this.env.config;
    const { temperature, maxTokens } = session.settings;
    const tools = new ToolRound(
      calls,
      this.env.tools,
      scope,
      (name) => this.env.registry.get(name, this.connection.id)?.source === `client:${this.connection.id}`,
      {
        clientToolTimeoutMs: clientTools.timeoutMs,
        maxResultChars: llm.maxToolResultChars,
        echoChars: llm.toolCallEchoChars,
      },
      turnCaller(this.env.llm, this.speech && ((question, signal) => this.askAloud(question, signal)), { temperature, maxTokens }),
    );
    const filler = this.fillerTimer();
    try {
      return await tools.run((frame) => this.send(frame as LlmServerFrame), record);
    } catch (error) {
      round.abort(error);
      throw error;
    } finally {
      clearTimeout(filler);
      this.controller.signal.removeEventListener('abort', stopRound);
      this.clock.toolsMs += performance.now() - started;
    }
  }

  /**
   * Says `question` as a sentence of the answer and waits for the connection's next `text_input`,
   * whose words answer it; ends with the turn, or when the asker stops waiting. One question at a
   * time per connection.
   */
  private askAloud(question: string, signal: AbortSignal): Promise<string> {
    const { state } = this.connection;
    if (state.question) return Promise.reject(new Error('Another question is waiting for the user to answer it'));
    this.speech!.interject(question);
    return new Promise<string>((resolve, reject) => {
      const signals = [signal, this.controller.signal];
      const settle = () => {
        signals.forEach((each) => each.removeEventListener('abort', stop));
        if (state.question === pending) state.question = undefined;
      };
      const stop = () => {
        settle();
        reject(new Error('The question was withdrawn before the user answered'));
      };
      const pending = {
        answer: (words: string) => {
          settle();
          resolve(words);
        },
      };
      if (signals.some((each) => each.aborted)) return stop();
      state.question = pending;
      signals.forEach((each) => each.addEventListener('abort', stop, { once: true }));
    });
  }

  private fillerTimer(): NodeJS.Timeout | undefined {
    const delay = this.env.config.llm.fillerDelayMs;
    const { speech, spokenLanguage } = this;
    if (delay === 0 || this.fillerSaid || !speech || !spokenLanguage) return undefined;
    return setTimeout(() => {
      this.fillerSaid = true;
      speech.interject(FILLERS[spokenLanguage]);
    }, delay);
  }

  private sayPartial(sentence: string): void {
    this.clock.firstSentenceAt ??= performance.now();
    this.send(partialResponseFrame(sentence, this.seq++));
  }

  /**
   * A cancelled turn's history: the user's words and, of the answer, only what the device says
   * it played, or else the sentences that were sent (OpenAI Realtime's truncate does the same).
   */
  private async keepWhatWasSpoken(sessionId: string, text: string): Promise<void> {
    const played = this.cancelledWith?.spoken ?? this.speech?.spoken ?? '';
    await this.env.sessions.recordExchange(sessionId, text, played.trim()).catch(() => undefined);
  }

  /** Sends one of the turn's frames, stamped with its id; once the turn is cancelled, nothing. */
  private send(frame: LlmServerFrame): void {
    if (this.cancelled) return;
    this.stamp(frame);
    this.out.next(frame);
  }

  /** The frames that end the turn, cancelled or not: its answer (or `cancelled`), then `idle`. */
  private end(): void {
    const idle = statusFrame('idle', { session_id: this.connection.state.sessionId });
    const ending = this.cancelled ? [statusFrame('cancelled', { turn_id: this.id }), idle] : [...(this.held ? [this.held] : []), idle];
    for (const frame of ending) {
      this.stamp(frame);
      this.out.next(frame);
    }
  }

  private stamp(frame: LlmServerFrame): void {
    const turnFrame = frame as TurnFrame;
    turnFrame.turn_id = this.id;
    if (this.options.origin) turnFrame.origin = this.options.origin;
  }

  private recordMetrics(): void {
    const { metrics } = this.env;
    if (!metrics) return;
    const { arrivedAt, firstSentenceAt } = this.clock;
    const outcome = this.cancelled ? 'cancelled' : this.isAnswered ? 'answered' : 'failed';
    metrics.turnEnded(outcome, performance.now() - arrivedAt, this.isAnswered && firstSentenceAt !== undefined ? firstSentenceAt - arrivedAt : undefined);
  }

  /** The turn's audit line and the end of its span. */
  private audit(failure: string | undefined, span: Span | undefined): void {
    const outcome = this.isAnswered && !this.cancelled ? 'ok' : this.cancelled ? 'cancelled' : (failure ?? 'aborted');
    endSpan(span, outcome, outcome === 'ok' || outcome === 'cancelled' ? undefined : { code: outcome });
    this.env.audit.turn({
      principal: this.connection.principal,
      protocol: this.connection.protocol,
      turnId: this.id,
      sessionId: this.connection.state.sessionId,
      outcome,
      durationMs: performance.now() - this.clock.arrivedAt,
      toolCalls: this.toolCallCount,
      input: this.input.text,
      answer: this.isAnswered && !this.cancelled ? (this.held as { content?: string } | undefined)?.content : undefined,
    });
  }
}
