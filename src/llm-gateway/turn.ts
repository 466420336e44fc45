import type { LanguageCode, TurnTiming } from './protocol';
import type { LlmConnection } from './llm-connection';
import type { SpeechStream } from './speech-stream';

/** Why a turn's signal aborted when the client cancelled it. */
export class TurnCancelled extends Error {
  constructor(readonly turnId: string) {
    super(`Turn ${turnId} was cancelled`);
    this.name = 'TurnCancelled';
  }
}

const elapsed = (from: number, to: number | undefined) => (to === undefined ? null : Math.round(to - from));

/**
 * One turn of an LLM-gateway connection, from its `text_input` to its `status: idle`: its id,
 * which every frame it sends carries; its signal, which aborts the model request, server tool
 * calls and device callbacks when the turn is cancelled or the connection closes; what it has
 * said; and where its time went. Once cancelled it sends nothing more but its ending.
 */
export class Turn {
  private readonly controller = new AbortController();
  private cancelledWith?: { spoken?: string };
  readonly arrivedAt = performance.now();
  firstTokenAt?: number;
  /** When the first sentence went out: a streaming turn's first partial, or else its final answer. */
  firstSentenceAt?: number;
  /** How much text the model has written (its deltas, raw). */
  writtenLength = 0;
  llmMs = 0;
  toolsMs = 0;
  /** Tool calls the model made, every round. */
  toolCalls = 0;
  /** The next partial's `seq`. */
  seq = 0;
  fillerSaid = false;
  /** The turn's language once it runs, and its speech when it streams. */
  language?: LanguageCode;
  speech?: SpeechStream;
  /** Whether it has begun (it waits in the queue until then). */
  started = false;
  /** Whether its final answer went out: a cancel comes too late. */
  answered = false;
  /** Takes the turn out of the connection's queue and ends it at once, while it waits there. */
  private leaveQueue?: () => void;

  constructor(
    readonly id: string,
    private readonly connection: LlmConnection,
  ) {}

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get cancelled(): boolean {
    return this.cancelledWith !== undefined;
  }

  /** The longest `spoken` a cancel may bring: what the model has written so far, or said (spoken forms are longer). */
  get spokenLimit(): number {
    return Math.max(this.speech?.spoken.length ?? 0, this.writtenLength);
  }

  /** The text the device says it played, when its cancel said. */
  get spokenByDevice(): string | undefined {
    return this.cancelledWith?.spoken;
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
    if (!this.started) this.leaveQueue?.();
  }

  /** The connection closed: everything of the turn stops. */
  abort(reason: unknown): void {
    this.controller.abort(reason);
  }

  /** Sends one of the turn's frames, stamped with its id; once the turn is cancelled, nothing. */
  send(frame: { turn_id?: string }): void {
    if (this.cancelledWith) return;
    frame.turn_id = this.id;
    this.connection.send(frame);
  }

  /** Sends the frames that end the turn, cancelled or not, in one write. */
  end(...frames: { turn_id?: string }[]): void {
    for (const frame of frames) frame.turn_id = this.id;
    this.connection.sendTogether(...frames);
  }

  /** Holds the turn's answer until its ending goes out with it (one write instead of two). */
  hold(frame: { turn_id?: string }): void {
    if (!this.cancelledWith) this.held = frame;
  }

  /** The answer held back for the ending, if any. */
  takeHeld(): { turn_id?: string } | undefined {
    const held = this.held;
    this.held = undefined;
    return held;
  }

  private held?: { turn_id?: string };

  timing(): TurnTiming {
    const now = performance.now();
    return {
      first_token_ms: elapsed(this.arrivedAt, this.firstTokenAt),
      first_sentence_ms: elapsed(this.arrivedAt, this.firstSentenceAt),
      total_ms: Math.round(now - this.arrivedAt),
      llm_ms: Math.round(this.llmMs),
      tools_ms: Math.round(this.toolsMs),
    };
  }
}
