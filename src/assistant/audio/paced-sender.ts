export interface PacedSenderOptions<Frame> {
  /** Hands one frame to the connection. */
  send: (frame: Frame) => void;
  /** How long one frame plays. */
  frameMs: number;
  /** Frames the device may hold beyond what it is playing: enough to ride out network jitter, few enough that an abort is heard at once. */
  leadFrames?: number;
  /** Frames waiting here before {@link PacedSender.enqueue} makes its caller wait. */
  capacity?: number;
  /**
   * Milliseconds from the sender's creation before its first frame may go: for a transport whose
   * audio travels on another channel than the message announcing it, which audio could overtake.
   */
  firstFrameDelayMs?: number;
  /** Milliseconds from any fixed origin; tests pass a fake clock. */
  now?: () => number;
}

/** How a sender's stream ended: every frame sent, or dropped by {@link PacedSender.abort}. */
export type PacedSenderOutcome = 'sent' | 'aborted';

/**
 * Sends audio frames to a device no faster than it plays them, plus a small lead. Synthesis
 * runs faster than real time; sent all at once, an answer would sit in socket buffers and in the
 * device, where neither a barge-in nor a new question can take it back, and a long answer would
 * hold its whole audio in memory. Here the device holds at most `leadFrames`, this queue at most
 * `capacity` (the producer waits on {@link enqueue}), and {@link abort} drops the rest at once.
 * One timer at a time, none once the stream is over.
 */
export class PacedSender<Frame> {
  readonly finished: Promise<PacedSenderOutcome>;
  private readonly queue: Frame[] = [];
  private readonly waiting: { frame: Frame; queued: () => void }[] = [];
  private readonly leadMs: number;
  private readonly capacity: number;
  private readonly now: () => number;
  private playedUntil = -Infinity;
  /** Before this instant (of {@link now}) no frame is sent. */
  private readonly firstFrameAt: number;
  private timer: NodeJS.Timeout | undefined;
  private ended = false;
  private outcome: PacedSenderOutcome | undefined;
  private settle!: (outcome: PacedSenderOutcome) => void;

  constructor(private readonly options: PacedSenderOptions<Frame>) {
    const leadFrames = options.leadFrames ?? 3;
    if (!(options.frameMs > 0)) throw new RangeError(`frameMs must be positive, not ${options.frameMs}`);
    if (!Number.isInteger(leadFrames) || leadFrames < 1) throw new RangeError(`leadFrames must be a positive integer, not ${leadFrames}`);
    this.leadMs = leadFrames * options.frameMs;
    this.capacity = options.capacity ?? 2 * leadFrames;
    if (!Number.isInteger(this.capacity) || this.capacity < 1) throw new RangeError(`capacity must be a positive integer, not ${this.capacity}`);
    this.now = options.now ?? (() => performance.now());
    const delayMs = options.firstFrameDelayMs ?? 0;
    if (!(delayMs >= 0)) throw new RangeError(`firstFrameDelayMs must not be negative, not ${delayMs}`);
    this.firstFrameAt = this.now() + delayMs;
    this.finished = new Promise((resolve) => (this.settle = resolve));
  }

  /** Frames queued or waiting to be. */
  get pending(): number {
    return this.queue.length + this.waiting.length;
  }

  /**
   * Queues `frame` after those before it; resolves once it is queued, at once while there is
   * room. After {@link abort} the frame is dropped and the promise resolves.
   */
  enqueue(frame: Frame): Promise<void> {
    if (this.outcome) return Promise.resolve();
    if (this.ended) throw new Error('PacedSender.enqueue after end()');
    if (this.waiting.length === 0 && this.queue.length < this.capacity) {
      this.queue.push(frame);
      this.pump();
      return Promise.resolve();
    }
    return new Promise((queued) => this.waiting.push({ frame, queued }));
  }

  /** No more frames: {@link finished} resolves once the queued ones are sent. */
  end(): void {
    this.ended = true;
    this.pump();
  }

  /** Drops every frame not yet sent, stops the timer, and releases waiting producers. */
  abort(): void {
    if (this.outcome) return;
    this.queue.length = 0;
    this.finish('aborted');
  }

  private pump(): void {
    if (this.outcome) return;
    clearTimeout(this.timer);
    this.timer = undefined;
    const now = this.now();
    if (this.queue.length > 0 && now < this.firstFrameAt) {
      this.timer = setTimeout(() => this.pump(), Math.max(1, Math.ceil(this.firstFrameAt - now)));
      return;
    }
    while (this.queue.length > 0 && this.buffered(now) + this.options.frameMs <= this.leadMs) {
      const frame = this.queue.shift() as Frame;
      this.playedUntil = Math.max(this.playedUntil, now) + this.options.frameMs;
      this.admitWaiting();
      this.options.send(frame);
      if (this.outcome) return;
    }
    if (this.queue.length > 0) {
      const due = this.playedUntil - this.leadMs + this.options.frameMs;
      this.timer = setTimeout(() => this.pump(), Math.max(1, Math.ceil(due - now)));
    } else if (this.ended) {
      this.finish('sent');
    }
  }

  /** Milliseconds of sent audio the device has yet to play, if it plays from the first frame on. */
  private buffered(now: number): number {
    return Math.max(0, this.playedUntil - now);
  }

  private admitWaiting(): void {
    while (this.waiting.length > 0 && this.queue.length < this.capacity) {
      const next = this.waiting.shift() as { frame: Frame; queued: () => void };
      this.queue.push(next.frame);
      next.queued();
    }
  }

  private finish(outcome: PacedSenderOutcome): void {
    this.outcome = outcome;
    clearTimeout(this.timer);
    this.timer = undefined;
    for (const { queued } of this.waiting.splice(0)) queued();
    this.settle(outcome);
  }
}
