import { Observable } from 'rxjs';
import { WebSocket } from 'ws';
import { GatewayErrorCode } from '../core/errors/gateway-error';
import { errorFrame, LlmServerFrame } from './llm-gateway.frames';
import type { ToolResultDto } from './dto/client-messages.dto';

/** Requests a connection may have waiting behind the one being processed. */
export const MAX_WAITING_REQUESTS = 8;

/** A `tool_callback` sent to the device and not yet answered. */
export interface PendingCallback {
  toolName: string;
  settle(result: ToolResultDto): void;
}

export type Emit = (frame: LlmServerFrame) => void;

/**
 * One LLM-gateway connection: who it is, the session it speaks in, its preferences, and the
 * order of its requests. Turns and session changes run one at a time, in arrival order, so a
 * second `text_input` waits for the first answer; `tool_result`, `register_tools` and `ping`
 * are handled at once, since a waiting turn may depend on them.
 */
export class LlmConnection {
  sessionId = '';
  /** Cleaning for speech, on unless the client turned it off with `configure`. */
  cleanResponses = true;
  readonly pendingCallbacks = new Map<string, PendingCallback>();
  private waiting = 0;
  /** Requests running or waiting; 0 means the connection is idle. */
  private active = 0;
  private whenIdle?: () => void;
  private emitToTurn?: Emit;

  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    readonly id: string,
    readonly socket: WebSocket,
    readonly principal: string,
  ) {}

  /** Runs `opening` (the session's creation) before any request of the connection. */
  startWith(opening: () => Promise<unknown>): void {
    this.queue = this.queue.then(opening).catch(() => undefined);
  }

  /**
   * Sends a frame: into the stream of the request being processed when there is one (so it is
   * ordered with that request's frames and passes its interceptors), straight to the socket
   * otherwise.
   */
  send(frame: LlmServerFrame): void {
    if (this.emitToTurn) this.emitToTurn(frame);
    else if (this.socket.readyState === WebSocket.OPEN) this.socket.send(JSON.stringify(frame));
  }

  /**
   * Runs `task` after the requests before it, as a stream of the frames it emits. Unsubscribing
   * (the socket closed) aborts the task's signal.
   */
  serialize(task: (emit: Emit, signal: AbortSignal) => Promise<void>): Observable<LlmServerFrame> {
    return new Observable<LlmServerFrame>((subscriber) => {
      if (this.waiting >= MAX_WAITING_REQUESTS) {
        subscriber.next(
          errorFrame(GatewayErrorCode.INVALID_MESSAGE, `Too many requests waiting: at most ${MAX_WAITING_REQUESTS}, wait for the answers`),
        );
        subscriber.complete();
        return undefined;
      }
      const abort = new AbortController();
      const emit: Emit = (frame) => subscriber.next(frame);
      this.waiting += 1;
      this.active += 1;
      const run = this.queue.then(async () => {
        this.waiting -= 1;
        if (abort.signal.aborted) return;
        this.emitToTurn = emit;
        try {
          await task(emit, abort.signal);
        } finally {
          this.emitToTurn = undefined;
        }
      });
      this.queue = run.catch(() => undefined);
      run
        .then(
          () => subscriber.complete(),
          (error: unknown) => subscriber.error(error),
        )
        .finally(() => {
          this.active -= 1;
          if (this.active === 0) this.whenIdle?.();
        });
      return () => abort.abort(new Error('Connection closed'));
    });
  }

  /**
   * Closes the socket with `code` as soon as no request is running or waiting: at once when the
   * connection is idle, after the last answer otherwise. Resolves when the close has begun, or
   * when the socket closed by itself.
   */
  closeWhenIdle(code: number, reason: string): Promise<void> {
    return new Promise((resolve) => {
      const close = () => {
        if (this.socket.readyState === WebSocket.OPEN) this.socket.close(code, reason);
        resolve();
      };
      this.socket.once('close', () => resolve());
      if (this.active === 0) close();
      else this.whenIdle = close;
    });
  }
}
