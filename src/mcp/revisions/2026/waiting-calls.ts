import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import {
  CLIENT_CAPABILITIES_META_KEY,
  createRequestStateCodec,
  InputRequiredResult,
  inputRequired,
  MissingRequiredClientCapabilityError,
  ProtocolError,
  ProtocolErrorCode,
  RequestStateCodec,
  ServerContext,
} from '@modelcontextprotocol/server';
import { withoutMcpErrorPrefix } from '../../../core/errors/mcp-error-words';
import { newId } from '../../../core/new-id';
import { PendingReplies } from '../../../core/requests/pending-replies';
import type { ToolCaller } from '../../../core/tools/tool-definition';
import { keyForQuestion, missingCapability, parsedAnswer, QuestionMethod, questionRefusal } from '../../methods/client-questions';
import { describeIssues } from '../readable-errors';
import type { ForwardedRetry, RoundOutcome, WaitingCallRelay } from './waiting-call-relay';

/** How long a client may take to retry a call that waits for its input, and how long a finished call's result waits for that retry. */
export const RETRY_WINDOW_SECONDS = 600;

/** What a 2026 client of one round sees of the call: its progress and log relays, built per round ({@link WaitingCalls}). */
export type RoundCaller = Pick<ToolCaller, 'progress' | 'log'>;

/** A question put to the client, as the next `input_required` result shows it. */
interface Question {
  method: QuestionMethod;
  params: Record<string, unknown> | undefined;
}

/** What a waiting request answers in the end: a `tools/call`'s result, a prompt, a resource's contents. */
export type FinalAnswer = Record<string, unknown>;

type Outcome = { result: FinalAnswer } | { error: unknown };

/** The state a waiting call's `input_required` result carries, sealed: the client echoes it on its retry. */
interface WaitingState {
  call: string;
  /** The instance the call waits in ({@link WaitingCallRelay}). */
  instance: string;
  /** Which of the call's rounds minted it: each round's state differs, even within one second of the last. */
  round: number;
}

/**
 * One request of a 2026 client (a tool call, a prompt, a resource read) that may need the
 * client's input while it runs: an upstream's elicitation, sampling or roots request. The call runs on
 * across the client's HTTP exchanges ("rounds");
 * a question ends the round with an `input_required` result, and the client's retry, carrying its
 * answers, opens the next one, which ends with the result or the next question.
 */
class WaitingCall {
  readonly id = newId();
  /** Ends the call: when a round's client goes away, nobody retries in time, or it asks what the client cannot answer. */
  readonly abort = new AbortController();
  /**
   * The open questions, by key, each waiting for the client's answer in a retry. One the caller
   * withdraws (its signal) is gone from the next round. Those still open when the call ends are
   * left to their callers to withdraw, as an upstream's relay does when its call ends, so the
   * upstream hears its own words for it.
   */
  private readonly questions = new PendingReplies<Record<string, unknown>, Question>();
  private asked = 0;
  private rounds = 0;
  private outcome?: Outcome;
  private wake?: () => void;
  /** The client of the round now open; `undefined` between rounds, when progress and logs have nowhere to go. */
  private round?: { context: ServerContext; caller: RoundCaller };
  /** The capabilities the client declared in its latest round. */
  private capabilities: Record<string, unknown> = {};
  private expiry?: NodeJS.Timeout;

  constructor(
    readonly principal: string,
    /** What the request names: the tool, the prompt or the resource's URI; its retry must name the same. */
    readonly target: string,
    private readonly registry: { admit(call: WaitingCall): boolean; forget(call: WaitingCall): void },
    /** Answers the client sent with its first request, unasked: the upstream may take them instead of asking. */
    private unaskedAnswers?: Record<string, unknown>,
  ) {}

  /**
   * The call's caller: progress and logs to the round now open, questions to the client as
   * `input_required`; what the client declared is its latest round's, and a server's need of more
   * ends the call with -32021.
   */
  readonly caller: ToolCaller = {
    progress: async (update) => this.round?.caller.progress?.(update),
    log: async (message) => this.round?.caller.log?.(message),
    request: (method, params, signal, key) => this.ask(method, params, signal, key),
    declaredCapabilities: () => this.capabilities,
    missingCapabilities: (required, message) => this.fail(new MissingRequiredClientCapabilityError({ requiredCapabilities: required }, message)),
    takeUnaskedAnswers: () => {
      const answers = this.unaskedAnswers;
      this.unaskedAnswers = undefined;
      return answers;
    },
  };

  run(call: (caller: ToolCaller, signal: AbortSignal) => Promise<FinalAnswer>): void {
    call(this.caller, this.abort.signal).then(
      (result) => this.settle({ result }),
      (error: unknown) => this.settle({ error }),
    );
  }

  get inRound(): boolean {
    return this.round !== undefined;
  }

  /** The round whose `requestState` was issued last: only that state may retry the call. */
  get latestRound(): number {
    return this.rounds;
  }

  /**
   * Hands the client's answers to the questions they answer: each must be the answer its question
   * asked for, or the retry is refused and the question stays open. Answers to questions the call
   * no longer asks (it withdrew them) are ignored.
   */
  answer(responses: Record<string, unknown> | undefined): void {
    const answered: [string, Record<string, unknown>][] = [];
    for (const [key, value] of Object.entries(responses ?? {})) {
      const question = this.questions.tagOf(key);
      if (!question) continue;
      const parsed = parsedAnswer(question.method, value);
      if (!parsed.success)
        throw new McpError(
          ErrorCode.InvalidParams,
          `inputResponses["${key}"] is not an answer to ${question.method}: ${describeIssues(parsed.error.issues, 'the answer')}`,
        );
      answered.push([key, parsed.data as Record<string, unknown>]);
    }
    for (const [key, value] of answered) this.questions.settle(key, value);
  }

  /**
   * One round: until the call ends (its result, or its error thrown) or asks something (an
   * `input_required` result naming every open question). The round's client going away ends the call.
   */
  async serveRound(
    context: ServerContext,
    caller: RoundCaller,
    seal: (call: string, round: number) => Promise<string>,
  ): Promise<FinalAnswer | InputRequiredResult> {
    clearTimeout(this.expiry);
    this.round = { context, caller };
    this.capabilities = capabilitiesOf(context);
    const leave = () => this.abort.abort(new McpError(ErrorCode.ConnectionClosed, 'The client went away while its call waited'));
    context.mcpReq.signal.addEventListener('abort', leave, { once: true });
    try {
      while (this.outcome === undefined && this.questions.size === 0) await new Promise<void>((resolve) => (this.wake = resolve));
      if (this.outcome !== undefined) {
        this.registry.forget(this);
        if ('error' in this.outcome) throw this.outcome.error;
        return this.outcome.result;
      }
      const inputRequests = Object.fromEntries([...this.questions.entries()].map(([key, question]) => [key, { ...question }]));
      const requestState = await seal(this.id, ++this.rounds);
      this.expiry = setTimeout(() => this.registry.forget(this), RETRY_WINDOW_SECONDS * 1000);
      this.expiry.unref();
      return inputRequired({ inputRequests: inputRequests as InputRequiredResult['inputRequests'], requestState });
    } finally {
      context.mcpReq.signal.removeEventListener('abort', leave);
      this.round = undefined;
      this.wake = undefined;
    }
  }

  /**
   * Opens a question for the next round, under the key the upstream asked it under when that is
   * free in this call (else `<capability>-N`). A question the client did not declare the
   * capability for ends the whole call with MissingRequiredClientCapabilityError (-32021, HTTP
   * 400), as a 2026 server answers a request it cannot serve without that capability, and stops
   * the upstream's call.
   */
  private ask(method: string, params: Record<string, unknown> | undefined, signal: AbortSignal, named?: string): Promise<Record<string, unknown>> {
    const refusal = questionRefusal(method, this.capabilities);
    if (refusal) {
      const missing = missingCapability(method, this.capabilities);
      const words = withoutMcpErrorPrefix(refusal.message);
      if (missing !== undefined) this.fail(new MissingRequiredClientCapabilityError({ requiredCapabilities: { [missing]: {} } }, words));
      return Promise.reject(refusal);
    }
    if (!this.registry.admit(this))
      return Promise.reject(new McpError(ErrorCode.InvalidRequest, `${method} is not relayed: too many calls of this client wait for input`));
    const key = keyForQuestion(
      method as QuestionMethod,
      named,
      (taken) => this.questions.has(taken),
      () => ++this.asked,
    );
    // The round open now, if any, ends with the question; else the next one shows it.
    return this.questions.request(() => this.wake?.(), { id: key, tag: { method: method as QuestionMethod, params }, signal });
  }

  /** Stops the call if it still runs; a finished one has nothing to stop (and an abort would cost an exception object per request). */
  stop(): void {
    if (this.outcome === undefined) this.abort.abort();
  }

  /** Ends the call with `error`, whatever it still waits for: its round (or the retry) answers with it, and the call stops. */
  private fail(error: Error): void {
    this.settle({ error });
    this.abort.abort(error);
  }

  /** The call ended (the first end counts); a round open now answers with it, else the client's retry does, within the retry window. */
  private settle(outcome: Outcome): void {
    if (this.outcome !== undefined) return;
    this.outcome = outcome;
    if (this.wake) return this.wake();
    clearTimeout(this.expiry);
    if (this.abort.signal.aborted) return;
    this.expiry = setTimeout(() => this.registry.forget(this), RETRY_WINDOW_SECONDS * 1000);
    this.expiry.unref();
  }
}

/**
 * The requests of 2026-07-28 clients that MCP's multi-round-trip requests let ask the client
 * something: the 2025 revisions send the client a request during the call, the 2026 one answers
 * the call with `input_required`, and the client calls again with its answers and the
 * `requestState` it was given. An upstream's question cannot wait for a new call, so the call
 * itself waits here, in the instance that started it, between the client's exchanges; a retry
 * that reaches another instance is relayed to it ({@link WaitingCallRelay}).
 *
 * `requestState` is sealed (the SDK's HMAC codec) under the relay's key and bound to the
 * principal: a retry by anyone else, or a tampered one, is refused as the SDK's invalid
 * `requestState`, and so is an earlier round's once a later one was issued. A principal has at most `WS_MAX_CALLS_IN_FLIGHT` calls waiting in an instance;
 * a question beyond that is refused. A question the client did not declare the capability for
 * ends the call with -32021 ({@link MissingRequiredClientCapabilityError}).
 */
export class WaitingCalls {
  private readonly calls = new Map<string, WaitingCall>();
  private readonly perPrincipal = new Map<string, number>();
  private readonly codec: RequestStateCodec<WaitingState>;

  constructor(
    private readonly maxPerPrincipal: number,
    private readonly relay: WaitingCallRelay,
  ) {
    this.codec = createRequestStateCodec<WaitingState>({ key: relay.key, ttlSeconds: RETRY_WINDOW_SECONDS, bind: bindingOf });
    void relay.listen((retry, signal) => this.serveForwarded(retry, signal));
  }

  /** The `requestState.verify` hook of the servers whose calls wait here. */
  readonly verifyState = (state: string, context: ServerContext): Promise<WaitingState> => this.codec.verify(state, context);

  /** A client's first request: runs `call` and serves its first round; the call waits here only once it asks something. */
  start(
    principal: string,
    target: string,
    context: ServerContext,
    caller: RoundCaller,
    call: (caller: ToolCaller, signal: AbortSignal) => Promise<FinalAnswer>,
  ): Promise<FinalAnswer | InputRequiredResult> {
    const entry = new WaitingCall(principal, target, this, context.mcpReq.inputResponses);
    // The round opens first: a call may ask at once, and asking needs the round's capabilities.
    const answer = entry.serveRound(context, caller, (id, round) => this.seal(id, round, context));
    entry.run(call);
    return answer;
  }

  /** A client's retry, with its answers and the `requestState` the SDK verified already: served here, or where its call waits. */
  async resume(principal: string, target: string, context: ServerContext, caller: RoundCaller): Promise<FinalAnswer | InputRequiredResult> {
    const state = context.mcpReq.requestState<WaitingState>()!;
    if (state.instance === this.relay.instance) return this.resumeHere(state, principal, target, context.mcpReq.inputResponses, context, caller);
    const retry: ForwardedRetry = {
      call: state.call,
      round: state.round,
      method: context.mcpReq.method,
      principal,
      target,
      responses: context.mcpReq.inputResponses,
      capabilities: capabilitiesOf(context),
    };
    const outcome = await this.relay.forward(state.instance, retry, context.mcpReq.signal);
    if (!outcome) throw new McpError(ErrorCode.InvalidParams, 'This call no longer waits for input: the instance it ran in is gone');
    if ('error' in outcome) throw new McpError(outcome.error.code, outcome.error.message, outcome.error.data);
    return outcome.result;
  }

  /** Keeps `entry` until it ends, unless its principal has {@link maxPerPrincipal} calls waiting already. */
  admit(entry: WaitingCall): boolean {
    if (this.calls.has(entry.id)) return true;
    const waiting = this.perPrincipal.get(entry.principal) ?? 0;
    if (waiting >= this.maxPerPrincipal) return false;
    this.calls.set(entry.id, entry);
    this.perPrincipal.set(entry.principal, waiting + 1);
    return true;
  }

  forget(entry: WaitingCall): void {
    entry.stop();
    if (!this.calls.delete(entry.id)) return;
    const left = (this.perPrincipal.get(entry.principal) ?? 1) - 1;
    if (left === 0) this.perPrincipal.delete(entry.principal);
    else this.perPrincipal.set(entry.principal, left);
  }

  private resumeHere(
    { call, round }: Pick<WaitingState, 'call' | 'round'>,
    principal: string,
    target: string,
    responses: Record<string, unknown> | undefined,
    context: ServerContext,
    caller: RoundCaller,
  ): Promise<FinalAnswer | InputRequiredResult> {
    const entry = this.calls.get(call);
    if (!entry || entry.principal !== principal) {
      throw new McpError(ErrorCode.InvalidParams, 'This call no longer waits for input: it ended and its result was collected, or nobody retried it in time');
    }
    if (entry.target !== target) throw new McpError(ErrorCode.InvalidParams, `This requestState belongs to a call of "${entry.target}", not of "${target}"`);
    if (round !== entry.latestRound) throw staleRequestState();
    if (entry.inRound) throw new McpError(ErrorCode.InvalidRequest, 'A retry of this call is being answered already');
    entry.answer(responses);
    return entry.serveRound(context, caller, (id, round) => this.seal(id, round, context));
  }

  /**
   * A retry another instance received for a call waiting here: served as if it had come here
   * (its client going away, `signal`, ends the call), except that the call's progress and log
   * messages of this round have no client to go to.
   */
  private async serveForwarded(retry: ForwardedRetry, signal: AbortSignal): Promise<RoundOutcome> {
    const context = {
      mcpReq: { method: retry.method, signal, envelope: { [CLIENT_CAPABILITIES_META_KEY]: retry.capabilities } },
      http: { authInfo: { extra: { principal: retry.principal } } },
    } as unknown as ServerContext;
    try {
      return { result: await this.resumeHere(retry, retry.principal, retry.target, retry.responses, context, {}) };
    } catch (error) {
      // An SDK 2.x error (-32021 when the call asked what the client did not declare) keeps its code and data too.
      const failure = error instanceof McpError || error instanceof ProtocolError ? error : new McpError(ErrorCode.InternalError, (error as Error).message);
      return { error: { code: failure.code, message: withoutMcpErrorPrefix(failure.message), data: failure.data } };
    }
  }

  private seal(call: string, round: number, context: ServerContext): Promise<string> {
    return this.codec.mint({ call, instance: this.relay.instance, round }, context);
  }
}

/**
 * The refusal of a `requestState` that an earlier round of its call issued: once a later round
 * asked again, the older state would answer questions the call no longer asks, so it is spent,
 * and refused in the words the SDK refuses a tampered or expired one with.
 */
function staleRequestState(): ProtocolError {
  return new ProtocolError(ProtocolErrorCode.InvalidParams, 'Invalid or expired requestState', { reason: 'invalid_request_state' });
}

/** What a `requestState` is bound to: the method and the principal, so nobody else can use it. */
function bindingOf(context: ServerContext): string {
  return `${context.mcpReq.method}\0${String(context.http?.authInfo?.extra?.principal ?? '')}`;
}

/** The capabilities the client of a 2026 request declared in its envelope. */
export function capabilitiesOf(context: ServerContext): Record<string, unknown> {
  return (context.mcpReq.envelope?.[CLIENT_CAPABILITIES_META_KEY as never] as Record<string, unknown> | undefined) ?? {};
}
