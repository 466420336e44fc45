import type { IncomingMessage } from 'http';
import { WebSocket } from 'ws';
import { CallsInFlight } from '../limits/calls-in-flight';
import { Heartbeat } from './heartbeat';
import { SerialQueue } from './serial-queue';

/** How long a closing socket gets to finish the close handshake before it is cut. */
const CLOSE_GRACE_MS = 1000;

/** Close code and reason for a socket whose peer stopped answering. */
export const HEARTBEAT_CLOSE = { code: 1001, reason: 'Heartbeat timeout' } as const;

/** WebSocket's "policy violation": a client that stops reading, or never authenticates. */
export const CLOSE_POLICY_VIOLATION = 1008;

/** WebSocket's "message too big". */
export const CLOSE_MESSAGE_TOO_BIG = 1009;

/** WebSocket's "try again later": a cap was reached. */
export const CLOSE_TRY_AGAIN_LATER = 1013;

export interface KeepAliveOptions {
  intervalMs: number;
  timeoutMs: number;
  /** The protocol's own ping (an MCP `ping` envelope); a WebSocket ping frame by default, whose pong every client sends by itself. */
  ping?: () => void;
  /** What a silent peer gets; a close with {@link HEARTBEAT_CLOSE} by default. */
  onTimeout?: () => void;
}

/** Where a connection came in: everything known at the upgrade. */
export interface ConnectionOrigin {
  id: string;
  /** The protocol's name (`llm`, `mcp`, `litemcp`, `utcp`), for counts, limits and logs. */
  protocol: string;
  /** The route pattern that accepted the upgrade, e.g. `/litemcp/:tool`. */
  route: string;
  params: Readonly<Record<string, string>>;
  request: IncomingMessage;
  /** Bytes that may wait to be sent before the client counts as not reading. */
  maxBufferedBytes?: number;
  /** Tool calls the connection may have running at once. */
  maxCallsInFlight?: number;
  /**
   * Counts a principal settled by an auth frame against the caps; returns why it is refused.
   * Without one, {@link GatewayConnection.authenticate} only records the principal.
   */
  admit?: (connection: GatewayConnection, principal: string) => string | undefined;
}

/**
 * What a protocol's frame handlers see of a connection: who it is, where it came in, its
 * state, and how to answer. A WebSocket connection is one; a protocol served over another
 * transport too (LiteMCP over stdio) gives its handlers one of its own.
 */
export interface FrameConnection<State = unknown> {
  readonly id: string;
  readonly protocol: string;
  readonly params: Readonly<Record<string, string>>;
  /** The subprotocol the client chose (`''` for none): it selects the handlers. */
  readonly subprotocol: string;
  /** The authenticated principal; frames of handlers not marked `beforeAuth` need it. */
  principal?: string;
  state: State;
  /** Aborted when the connection ends: calls made for it stop with it. */
  readonly signal?: AbortSignal;
  /** Bounds the tool calls the connection has running at once. */
  readonly callsInFlight?: CallsInFlight;
  /** Sends one frame (an object as JSON, a string as it is); false when it could not be sent. */
  send(frame: unknown): boolean;
  /** A frame arrived (a sign of life). */
  markAlive(): void;
}

/**
 * One WebSocket connection, from the upgrade to the close: made by the adapter, one per socket,
 * and what every protocol works with instead of the socket. It knows who the client is (the
 * principal, settled once: at the upgrade, or by the protocol's auth frame), sends frames,
 * runs the protocol's serial work, keeps the peer alive or drops it, and holds the protocol's
 * own state in {@link state}. Everything it starts (timers, listeners, queued work) ends when
 * the socket closes.
 */
export class GatewayConnection<State = unknown> implements FrameConnection<State> {
  readonly id: string;
  readonly protocol: string;
  readonly route: string;
  readonly params: Readonly<Record<string, string>>;
  readonly request: IncomingMessage;
  readonly remoteAddress?: string;
  /** The authenticated principal; `undefined` until the upgrade or {@link authenticate} settles it. */
  principal?: string;
  /** The protocol's own state for this connection, set when it opens. */
  state!: State;
  readonly callsInFlight: CallsInFlight;
  private heartbeat?: Heartbeat;
  private serial?: SerialQueue;
  private abort?: AbortController;
  private readonly closeHooks = new Set<() => void>();
  private closed = false;
  private pongsCount = false;
  private readonly maxBufferedBytes: number;
  private readonly admit?: ConnectionOrigin['admit'];

  constructor(
    readonly socket: WebSocket,
    origin: ConnectionOrigin,
  ) {
    this.id = origin.id;
    this.protocol = origin.protocol;
    this.route = origin.route;
    this.params = origin.params;
    this.request = origin.request;
    this.remoteAddress = origin.request.socket.remoteAddress;
    this.maxBufferedBytes = origin.maxBufferedBytes ?? Infinity;
    this.callsInFlight = new CallsInFlight(origin.maxCallsInFlight ?? Infinity);
    this.admit = origin.admit;
    socket.once('close', () => this.dispose());
  }

  /**
   * Settles the principal an auth frame proved; returns why a cap refuses it instead (the
   * protocol then tells its client and closes with {@link CLOSE_TRY_AGAIN_LATER}).
   */
  authenticate(principal: string): string | undefined {
    const refusal = this.admit?.(this, principal);
    if (refusal === undefined) this.principal = principal;
    return refusal;
  }

  /** The subprotocol the client and the route agreed on (`''` for none). */
  get subprotocol(): string {
    return this.socket.protocol;
  }

  /** Whether frames can still be sent. */
  get isOpen(): boolean {
    return this.socket.readyState === WebSocket.OPEN;
  }

  /** Aborted when the connection closes: for work that should stop with it. Made on first use. */
  get signal(): AbortSignal {
    this.abort ??= new AbortController();
    if (this.closed && !this.abort.signal.aborted) this.abort.abort(new Error('Connection closed'));
    return this.abort.signal;
  }

  /**
   * The connection's serial queue: its tasks run one at a time in arrival order, at most
   * `maxWaiting` waiting (fixed by the first caller).
   */
  queue(maxWaiting?: number): SerialQueue {
    return (this.serial ??= new SerialQueue(maxWaiting));
  }

  /**
   * Sends one frame (an object as JSON, a string as it is); false when the socket is no longer
   * open. A client that stops reading is closed (1008) once more than `maxBufferedBytes` wait
   * for it, which aborts its calls: nothing is buffered without bound, and producers (streamed
   * updates, answers) never wait for a reader.
   */
  send(frame: unknown): boolean {
    if (this.socket.readyState !== WebSocket.OPEN) return false;
    this.socket.send(typeof frame === 'string' ? frame : JSON.stringify(frame));
    if (this.socket.bufferedAmount > this.maxBufferedBytes) {
      this.close(CLOSE_POLICY_VIOLATION, `Client is not reading: over ${this.maxBufferedBytes} bytes wait to be sent`);
      return false;
    }
    return true;
  }

  /**
   * Sends frames that are ready together in one write to the network, not one each: a turn's
   * answer and its `idle`. Relies on `ws` writing through its socket (`_socket`), which it has
   * always done; without one, the frames go one by one.
   */
  sendTogether(...frames: unknown[]): void {
    const socket = (this.socket as unknown as { _socket?: { cork(): void; uncork(): void } })._socket;
    socket?.cork();
    try {
      for (const frame of frames) this.send(frame);
    } finally {
      socket?.uncork();
    }
  }

  /**
   * Stops reading the client's frames (TCP then holds the client back) until
   * {@link resumeReading}: for a protocol whose requests must wait their turn, so a client that
   * sends them faster than they are served waits instead of filling the gateway's memory. Frames
   * already read still arrive.
   */
  pauseReading(): void {
    if (this.socket.readyState === WebSocket.OPEN && !this.socket.isPaused) this.socket.pause();
  }

  resumeReading(): void {
    if (this.socket.isPaused) this.socket.resume();
  }

  /** Starts the keep-alive; every frame received and every pong counts as a sign of life. */
  keepAlive(options: KeepAliveOptions): void {
    if (this.closed) return;
    this.heartbeat?.stop();
    this.heartbeat = new Heartbeat({
      intervalMs: options.intervalMs,
      timeoutMs: options.timeoutMs,
      ping: options.ping ?? (() => this.socket.readyState === WebSocket.OPEN && this.socket.ping()),
      onTimeout: options.onTimeout ?? (() => this.close(HEARTBEAT_CLOSE.code, HEARTBEAT_CLOSE.reason)),
    });
    if (!options.ping && !this.pongsCount) {
      this.pongsCount = true;
      this.socket.on('pong', () => this.markAlive());
    }
  }

  /** A frame or a pong arrived. */
  markAlive(): void {
    this.heartbeat?.alive();
  }

  /** Runs `hook` once, when the connection closes (at once if it has); the function returned takes it back. */
  onClose(hook: () => void): () => void {
    if (this.closed) {
      hook();
      return () => undefined;
    }
    this.closeHooks.add(hook);
    return () => this.closeHooks.delete(hook);
  }

  /** Closes with a close frame; a peer that does not finish the handshake in time is cut off. */
  close(code: number, reason: string): void {
    const { readyState } = this.socket;
    if (readyState === WebSocket.CLOSED) return;
    if (readyState !== WebSocket.CLOSING) this.socket.close(code, reason);
    const cut = setTimeout(() => this.socket.terminate(), CLOSE_GRACE_MS);
    cut.unref();
    this.onClose(() => clearTimeout(cut));
  }

  /**
   * Closes with `code` once the serial queue is idle: at once when nothing runs or waits, after
   * the last answer otherwise. Resolves when the close has begun or the socket closed by itself.
   */
  async closeWhenIdle(code: number, reason: string): Promise<void> {
    if (this.serial) await Promise.race([this.serial.whenIdle(), new Promise<void>((resolve) => this.onClose(resolve))]);
    this.close(code, reason);
  }

  private dispose(): void {
    if (this.closed) return;
    this.closed = true;
    this.heartbeat?.stop();
    this.abort?.abort(new Error('Connection closed'));
    const hooks = [...this.closeHooks];
    this.closeHooks.clear();
    for (const hook of hooks) hook();
  }
}
