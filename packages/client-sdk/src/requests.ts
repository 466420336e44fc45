import { LlmGatewayError } from './errors.js';
import type {
  CancelFrame,
  ConfigureFrame,
  EndSessionFrame,
  LlmClientFrame,
  LlmResponseFrame,
  LlmServerFrame,
  PingFrame,
  RegisterToolsFrame,
  StartSessionFrame,
  TextInputFrame,
  ToolsRegisteredFrame,
  TurnTiming,
  TurnToolCall,
} from './protocol/index.js';

/** What a request made of a frame offered to it. */
export type Offer = 'consumed' | 'finished' | 'not-mine';

/**
 * A request sent (or about to be) and not yet answered. The protocol has no request ids, so
 * answers are matched by what the gateway guarantees about order: turns, `configure` and the
 * session requests are handled one after another, each one's frames before the next one's
 * (these are `ordered`); `register_tools` and `ping` are answered at once, by frames of their
 * own type.
 */
export abstract class PendingRequest<T = unknown> {
  readonly promise: Promise<T>;
  /** Handled in arrival order with the turns, its frames in that order. */
  abstract readonly ordered: boolean;
  /** Answered only when it fails (`configure`): a frame of a later request shows it succeeded. */
  readonly silentOnSuccess: boolean = false;
  private settled = false;
  private settle!: { resolve(value: T): void; reject(error: Error): void };

  constructor(readonly frame: LlmClientFrame) {
    this.promise = new Promise<T>((resolve, reject) => (this.settle = { resolve, reject }));
  }

  /** Takes a frame the gateway sent, if it belongs to this request. */
  abstract offer(frame: LlmServerFrame): Offer;

  /** Called once the frame is on the wire. */
  sent(): void {}

  get isSettled(): boolean {
    return this.settled;
  }

  resolve(value: T): void {
    if (this.settled) return;
    this.settled = true;
    this.settle.resolve(value);
  }

  reject(error: Error): void {
    if (this.settled) return;
    this.settled = true;
    this.settle.reject(error);
  }
}

/** How a turn ended: its answer, or, when it was cancelled, what of it was said. */
export interface TurnAnswer {
  turnId: string;
  /** The final answer; for a cancelled turn, the sentences that came before the cancel, joined. */
  content: string;
  /** Each sentence as it came, when streaming. */
  sentences: string[];
  toolCalls: TurnToolCall[];
  /** Where the turn's time went (gateways that report it). */
  timing?: TurnTiming;
  /** False when the gateway could not keep this exchange in the session's history (`history_saved: false`): later turns will not see it. */
  historySaved: boolean;
  cancelled: boolean;
}

/** What a turn reports as it goes. */
export interface TurnCallbacks {
  /** A sentence is ready to speak (streaming, `configure({stream: true})`). */
  onSentence?: (sentence: string, seq: number) => void;
}

/**
 * `text_input`: `status processing` opens the turn, `status idle` closes it. Frames that name
 * another turn (`turn_id`) are not this one's. A streaming turn's sentences come as partial
 * `llm_response`s (`is_final: false`) before the final one, which is the answer; a gateway that
 * does not stream sends only the final one, and the turn's first `llm_response` is its answer
 * (clients written to the spec take the first). Its first `error` is why it failed; an
 * `error` before `processing` means the gateway refused the request outright. `status
 * cancelled` ends it as cancelled.
 */
export class TurnRequest extends PendingRequest<TurnAnswer> {
  readonly ordered = true;
  private started = false;
  private answer?: LlmResponseFrame;
  private readonly sentences: string[] = [];
  private cancelled = false;
  private failure?: LlmGatewayError;

  constructor(
    override readonly frame: TextInputFrame & { turn_id: string },
    private readonly callbacks: TurnCallbacks,
    /** Called when the turn is over on the gateway, whatever its outcome. */
    private readonly onEnd: () => void,
    /** Sent at once, before the turns ahead of it have ended: the gateway cancels them (barge-in). */
    readonly preempts = false,
  ) {
    super(frame);
  }

  get turnId(): string {
    return this.frame.turn_id;
  }

  offer(frame: LlmServerFrame): Offer {
    if ('turn_id' in frame && frame.turn_id !== undefined && frame.turn_id !== this.turnId) return 'not-mine';
    switch (frame.type) {
      case 'status':
        if (frame.status === 'processing' && !this.started) {
          this.started = true;
          return 'consumed';
        }
        if (frame.status === 'cancelled' && frame.turn_id === this.turnId) {
          this.cancelled = true;
          return 'consumed';
        }
        if (!this.started && !this.cancelled) return 'not-mine';
        if (frame.status === 'waiting_for_tools') return 'consumed';
        if (frame.status === 'idle') {
          this.end();
          return 'finished';
        }
        return 'not-mine';
      case 'llm_response':
        if (!this.started) return 'not-mine';
        if (frame.is_final === false) {
          this.sentences.push(frame.content);
          this.callbacks.onSentence?.(frame.content, frame.seq ?? this.sentences.length - 1);
        } else {
          this.answer ??= frame;
        }
        return 'consumed';
      case 'tool_call':
        return this.started ? 'consumed' : 'not-mine';
      case 'error':
        if (!this.started) {
          this.failure = LlmGatewayError.fromFrame(frame);
          this.end();
          return 'finished';
        }
        // A running turn fails with the model's, the session's or a device tool's code; an
        // INVALID_MESSAGE without this turn's id answers something else sent meanwhile (a late tool_result).
        if (frame.code === 'INVALID_MESSAGE' && frame.turn_id !== this.turnId) return 'not-mine';
        this.failure ??= LlmGatewayError.fromFrame(frame);
        return 'consumed';
      default:
        return 'not-mine';
    }
  }

  private end(): void {
    this.onEnd();
    if (this.answer || this.cancelled) {
      this.resolve({
        turnId: this.turnId,
        content: this.answer?.content ?? this.sentences.join(''),
        sentences: this.sentences,
        toolCalls: this.answer?.tool_calls ?? [],
        timing: this.answer?.timing,
        historySaved: this.answer?.history_saved !== false,
        cancelled: this.cancelled && !this.answer,
      });
    } else {
      this.reject(this.failure ?? new LlmGatewayError('NO_ANSWER', 'The turn ended without an answer'));
    }
  }
}

/** `cancel`: sent at once; the turn it stops answers it (`status cancelled`, then `idle`). */
export class CancelRequest extends PendingRequest<void> {
  readonly ordered = false;

  constructor(frame: CancelFrame) {
    super(frame);
  }

  override sent(): void {
    this.resolve();
  }

  offer(): Offer {
    return 'not-mine';
  }
}

/** `start_session`: answered by `status connected` with the session now in use. */
export class StartSessionRequest extends PendingRequest<string> {
  readonly ordered = true;

  constructor(frame: StartSessionFrame | EndSessionFrame) {
    super(frame);
  }

  offer(frame: LlmServerFrame): Offer {
    if (frame.type === 'status' && frame.status === 'connected') {
      this.resolve(String(frame.data.session_id));
      return 'finished';
    }
    if (frame.type === 'error') {
      this.reject(LlmGatewayError.fromFrame(frame));
      return 'finished';
    }
    return 'not-mine';
  }
}

/** `end_session`: `status idle {message: "Session ended"}`, then a new session as `start_session` gets one. */
export class EndSessionRequest extends StartSessionRequest {
  private ended = false;

  constructor() {
    super({ type: 'end_session' });
  }

  override offer(frame: LlmServerFrame): Offer {
    if (frame.type === 'status' && frame.status === 'idle' && !this.ended) {
      this.ended = true;
      return 'consumed';
    }
    return this.ended || frame.type === 'error' ? super.offer(frame) : 'not-mine';
  }
}

/**
 * `configure`: the gateway answers only a failure, so the request counts as done once sent. An
 * `error` that comes before the next request's frames is its failure; the client reports every
 * `error` frame as an event, so nothing else is done with it here.
 */
export class ConfigureRequest extends PendingRequest<void> {
  readonly ordered = true;
  override readonly silentOnSuccess = true;

  constructor(frame: ConfigureFrame) {
    super(frame);
  }

  override sent(): void {
    this.resolve();
  }

  offer(frame: LlmServerFrame): Offer {
    return frame.type === 'error' ? 'finished' : 'not-mine';
  }
}

/** `register_tools`: `tools_registered`, or TOOL_REGISTRATION_FAILED when client tools are off. */
export class RegisterToolsRequest extends PendingRequest<ToolsRegisteredFrame> {
  readonly ordered = false;

  constructor(frame: RegisterToolsFrame) {
    super(frame);
  }

  offer(frame: LlmServerFrame): Offer {
    if (frame.type === 'tools_registered') {
      this.resolve(frame);
      return 'finished';
    }
    if (frame.type === 'error' && frame.code === 'TOOL_REGISTRATION_FAILED') {
      this.reject(LlmGatewayError.fromFrame(frame));
      return 'finished';
    }
    return 'not-mine';
  }
}

/** `ping`: its `pong`. A ping that timed out still takes its late pong, so the next ping gets its own. */
export class PingRequest extends PendingRequest<void> {
  readonly ordered = false;

  constructor(frame: PingFrame = { type: 'ping' }) {
    super(frame);
  }

  offer(frame: LlmServerFrame): Offer {
    if (frame.type !== 'pong') return 'not-mine';
    this.resolve();
    return 'finished';
  }
}

/**
 * Sends requests in the order they were made, and hands each frame of the gateway to the
 * request it answers. Turns and session requests go out one at a time (the gateway would queue
 * them anyway), so a frame of the ordered stream always belongs to the oldest unanswered one;
 * `configure` goes out at once, since nothing acknowledges its success. Requests made while the
 * socket is down wait here until {@link setOpen}.
 */
export class RequestPipeline {
  private readonly waiting: PendingRequest[] = [];
  private readonly ordered: PendingRequest[] = [];
  private readonly immediate: PendingRequest[] = [];
  private open = false;

  constructor(private readonly transmit: (frame: LlmClientFrame) => void) {}

  /** Queues `request` behind the others (or before them, with `first`); returns its promise. */
  add<T>(request: PendingRequest<T>, first = false): Promise<T> {
    if (first) this.waiting.unshift(request);
    else this.waiting.push(request);
    this.pump();
    return request.promise;
  }

  /** Whether requests may be sent; opening sends what waited. */
  setOpen(open: boolean): void {
    this.open = open;
    this.pump();
  }

  /** Gives `frame` to the request it answers; false when it answers none. */
  offer(frame: LlmServerFrame): boolean {
    for (const request of this.immediate) {
      const outcome = request.offer(frame);
      if (outcome === 'not-mine') continue;
      if (outcome === 'finished') this.immediate.splice(this.immediate.indexOf(request), 1);
      return true;
    }
    while (this.ordered.length > 0) {
      const head = this.ordered[0];
      const outcome = head.offer(frame);
      if (outcome === 'not-mine') {
        if (!head.silentOnSuccess) return false;
        this.ordered.shift();
        continue;
      }
      if (outcome === 'finished') {
        this.ordered.shift();
        this.pump();
      }
      return true;
    }
    return false;
  }

  /** Fails the requests already sent (their answers will not come), keeping those not yet sent. */
  failSent(error: LlmGatewayError): void {
    for (const request of [...this.ordered.splice(0), ...this.immediate.splice(0)]) request.reject(error);
  }

  /** Fails every request, sent or not. */
  failAll(error: LlmGatewayError): void {
    this.failSent(error);
    for (const request of this.waiting.splice(0)) request.reject(error);
  }

  private pump(): void {
    while (this.open && this.waiting.length > 0) {
      const next = this.waiting[0];
      const preempts = next instanceof TurnRequest && next.preempts;
      if (next.ordered && !next.silentOnSuccess && !preempts && this.ordered.some((request) => !request.silentOnSuccess)) return;
      this.waiting.shift();
      (next.ordered ? this.ordered : this.immediate).push(next);
      this.transmit(next.frame);
      next.sent();
      // A sent request that needs no answer leaves at once.
      if (!next.ordered && next.isSettled) this.immediate.splice(this.immediate.indexOf(next), 1);
    }
  }
}
