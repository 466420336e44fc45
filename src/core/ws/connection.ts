import type { IncomingMessage } from 'http';
import { CallsInFlight } from '../limits/calls-in-flight';
import { ConnectionSocket, SOCKET_CLOSED, SOCKET_CLOSING, SOCKET_OPEN } from './connection-socket';
import { Heartbeat, HeartbeatPeer } from './heartbeat';
import type { SerialOptions } from './protocol-gateway.decorator';
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
  /** The upgrade request; for a connection admitted from another transport, one made up of what it said of itself (see `admittedRequest`). */
  request: IncomingMessage;
  /** Bytes that may wait to be sent before the client counts as not reading. */
  maxBufferedBytes?: number;
  /** Tool calls the connection may have running at once. */
  maxCallsInFlight?: number;
  /** The route's serial queue: its bound, and what happens past it. */
  serial?: SerialOptions;
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
  /** The connection's serial queue, where the handlers marked `serial` run (see the route's `serial` option); a transport that serves one request at a time has none. */
  queue?(): SerialQueue;
  /** Whether frames can still be sent; a transport that cannot tell leaves it out. */
  readonly isOpen?: boolean;
  /** Runs `hook` when the connection closes; the function returned takes it back. */
  onClose?(hook: () => void): () => void;
  /** Writes what is sent until the current tick ends in one go. */
  batchThisTick?(): void;
  /** Set by the dispatcher while a frame handled before authentication (an auth frame) has not answered: frames that need a principal wait for it. */
  authenticating?: Promise<void>;
}

/**
 * One WebSocket connection, from the upgrade to the close: made by the adapter, one per socket,
 * and what every protocol works with instead of the socket (or one a protocol admitted from
 * another transport, through the same guards and caps: see `UpgradeRouter.admitSocket`). It knows who the client is (the
 * principal, settled once: at the upgrade, or by the protocol's auth frame), sends frames,
 * runs the protocol's serial work, keeps the peer alive or drops it, and holds the protocol's
 * own state in {@link state}. Everything it starts (timers, listeners, queued work) ends when
 * the socket closes.
 */
export class GatewayConnection<State = unknown> implements FrameConnection<State>, HeartbeatPeer {
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
  authenticating?: Promise<void>;
  private heartbeat?: Heartbeat;
  private protocolPing?: () => void;
  private protocolTimeout?: () => void;
  private serial?: SerialQueue;
  private abort?: AbortController;
  /** An array, not a Set (32 bytes against 152): a connection has a handful of hooks. */
  private readonly closeHooks: (() => void)[] = [];
  private closed = false;
  private batching = false;
  private readonly maxBufferedBytes: number;
  private readonly serialOptions?: SerialOptions;
  private readonly admit?: ConnectionOrigin['admit'];

  constructor(
    /** Its transport: a `ws` WebSocket, or another that behaves as one (see {@link ConnectionSocket}). */
    readonly socket: ConnectionSocket,
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
    this.serialOptions = origin.serial;
    // `on`, not `once`: a socket closes once, and `once` would add a wrapper to every connection.
    socket.on('close', () => this.dispose());
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
    return this.socket.readyState === SOCKET_OPEN;
  }

  /** Aborted when the connection closes: for work that should stop with it. Made on first use. */
  get signal(): AbortSignal {
    this.abort ??= new AbortController();
    if (this.closed && !this.abort.signal.aborted) this.abort.abort(new Error('Connection closed'));
    return this.abort.signal;
  }

  /**
   * The connection's serial queue: its tasks run one at a time in arrival order, bounded as the
   * route's `serial` option says. With `whenFull: 'pause'`, past the bound the socket is not read
   * until half of the waiting tasks are served: TCP then holds the client back, and nothing is
   * refused out of turn.
   */
  queue(): SerialQueue {
    if (this.serial) return this.serial;
    const { maxWaiting, whenFull } = this.serialOptions ?? { maxWaiting: Number.POSITIVE_INFINITY, whenFull: 'refuse' };
    if (whenFull === 'refuse') return (this.serial = new SerialQueue(maxWaiting));
    const queue: SerialQueue = new SerialQueue(Number.POSITIVE_INFINITY, {
      added: () => queue.size > maxWaiting && this.pauseReading(),
      settled: () => queue.size <= maxWaiting / 2 && this.resumeReading(),
    });
    return (this.serial = queue);
  }

  /**
   * Sends one frame (an object as JSON, a string as it is); false when the socket is no longer
   * open. A client that stops reading is closed (1008) once more than `maxBufferedBytes` wait
   * for it, which aborts its calls: nothing is buffered without bound, and producers (streamed
   * updates, answers) never wait for a reader.
   */
  send(frame: unknown): boolean {
    if (this.socket.readyState !== SOCKET_OPEN) return false;
    this.socket.send(typeof frame === 'string' ? frame : JSON.stringify(frame));
    return this.stillReading();
  }

  /** Sends one binary message (audio), bounded as {@link send} is. */
  sendBinary(data: Uint8Array): boolean {
    if (this.socket.readyState !== SOCKET_OPEN) return false;
    this.socket.send(data, { binary: true });
    return this.stillReading();
  }

  /** Whether the client keeps up: past `maxBufferedBytes` waiting, it is closed (1008). */
  private stillReading(): boolean {
    if (this.socket.bufferedAmount > this.maxBufferedBytes) {
      this.close(CLOSE_POLICY_VIOLATION, `Client is not reading: over ${this.maxBufferedBytes} bytes wait to be sent`);
      return false;
    }
    return true;
  }

  /**
   * Holds what is sent from now until the current tick ends, and writes it to the network in one
   * go: a turn's answer and its `idle`, or anything an Observable answer emits at once. Relies on
   * `ws` writing through its socket (`_socket`), which it has always done; without one, frames
   * go as they are sent.
   */
  batchThisTick(): void {
    if (this.batching) return;
    const socket = (this.socket as unknown as { _socket?: { cork(): void; uncork(): void } })._socket;
    if (!socket) return;
    this.batching = true;
    socket.cork();
    process.nextTick(() => {
      this.batching = false;
      socket.uncork();
    });
  }

  /**
   * Stops reading the client's frames (TCP then holds the client back) until
   * {@link resumeReading}: for a protocol whose requests must wait their turn, so a client that
   * sends them faster than they are served waits instead of filling the gateway's memory. Frames
   * already read still arrive.
   */
  pauseReading(): void {
    if (this.socket.readyState === SOCKET_OPEN && !this.socket.isPaused) this.socket.pause();
  }

  resumeReading(): void {
    if (this.socket.isPaused) this.socket.resume();
  }

  /**
   * Starts the keep-alive (again, with new options, if it runs); every frame received and every
   * pong counts as a sign of life, heard off the socket itself, so no frame handler has to say so.
   */
  keepAlive(options: KeepAliveOptions): void {
    if (this.closed) return;
    if (!this.heartbeat) {
      const alive = () => this.heartbeat?.alive();
      this.socket.on('message', alive);
      this.socket.on('pong', alive);
    }
    this.heartbeat?.stop();
    this.protocolPing = options.ping;
    this.protocolTimeout = options.onTimeout;
    this.heartbeat = Heartbeat.start(options, this);
  }

  /** The heartbeat's ping: the protocol's own, or a WebSocket ping frame. */
  heartbeatPing(): void {
    if (this.protocolPing) this.protocolPing();
    else if (this.socket.readyState === SOCKET_OPEN) this.socket.ping();
  }

  /** The peer stayed silent: the protocol's own goodbye, or a close with {@link HEARTBEAT_CLOSE}. */
  heartbeatTimedOut(): void {
    if (this.protocolTimeout) this.protocolTimeout();
    else this.close(HEARTBEAT_CLOSE.code, HEARTBEAT_CLOSE.reason);
  }

  /** Runs `hook` once, when the connection closes (at once if it has); the function returned takes it back. */
  onClose(hook: () => void): () => void {
    if (this.closed) {
      hook();
      return () => undefined;
    }
    this.closeHooks.push(hook);
    return () => {
      const index = this.closeHooks.indexOf(hook);
      if (index >= 0) this.closeHooks.splice(index, 1);
    };
  }

  /** Closes with a close frame; a peer that does not finish the handshake within `graceMs` is cut off. */
  close(code: number, reason: string, graceMs = CLOSE_GRACE_MS): void {
    const { readyState } = this.socket;
    if (readyState === SOCKET_CLOSED) return;
    if (readyState !== SOCKET_CLOSING) this.socket.close(code, reason);
    const cut = setTimeout(() => this.socket.terminate(), graceMs);
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
    for (const hook of this.closeHooks.splice(0)) hook();
  }
}
