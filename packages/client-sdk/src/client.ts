import { backoffDelay, ReconnectOptions, ReconnectPolicy, reconnectPolicy } from './backoff.js';
import { TypedEmitter } from './emitter.js';
import { LlmGatewayError } from './errors.js';
import {
  CancelFrame,
  ConfigureSettings,
  ErrorFrame,
  LlmClientFrame,
  LlmResponseFrame,
  LlmServerFrame,
  parseServerFrame,
  PongFrame,
  StartSessionFrame,
  StatusFrame,
  ToolCallbackFrame,
  ToolCallFrame,
  ToolRegistration,
  ToolsRegisteredFrame,
} from './protocol/index.js';
import {
  ConfigureRequest,
  EndSessionRequest,
  PendingRequest,
  PingRequest,
  RegisterToolsRequest,
  RequestPipeline,
  StartSessionRequest,
  CancelRequest,
  TurnAnswer,
  TurnCallbacks,
  TurnRequest,
} from './requests.js';
import { isPush, PushedAnswer, PushSentence, PushTracker } from './push.js';
import { ClientTool, definitionOf, TOOL_VISIBILITIES, ToolRunner } from './tools.js';
import { checkSessionId, checkSettings, checkText } from './validation.js';
import { CONNECTING, messageText, OPEN, resolveWebSocket, WebSocketConstructor, WebSocketLike } from './websocket.js';

export interface LlmGatewayClientOptions {
  /** The gateway's WebSocket URL: `ws://host:9400` (or `/llm`); `wss://` behind TLS. */
  url: string;
  /** A bearer token of the gateway's `AUTH_TOKENS`, when auth is on. */
  token?: string;
  /**
   * How the token travels: an `Authorization` header (only `ws` can send one) or a `?token=`
   * query parameter (what browsers must use). Default: the header when the client loaded `ws`
   * itself, the query otherwise.
   */
  tokenIn?: 'header' | 'query';
  /** The WebSocket class to use. Default: the global one (browsers, Node 22+), else the `ws` package. */
  WebSocket?: WebSocketConstructor;
  /** Reconnect (and resume the session) when the socket drops; `false` to stay closed. Default on. */
  reconnect?: boolean | ReconnectOptions;
  /**
   * Longest a tool handler may run before its call is answered as failed, ms. Default 25 000,
   * under the gateway's default `CLIENT_TOOL_TIMEOUT` (30 s), so the model hears why.
   */
  toolTimeoutMs?: number;
  /** Longest `connect()` and each reconnection wait for the gateway to give a session, ms. Default 10 000. */
  connectTimeoutMs?: number;
}

/** `idle` until `connect()`; `closed` after `close()` or when the socket dropped for good. */
export type ConnectionState = 'idle' | 'connecting' | 'open' | 'reconnecting' | 'closing' | 'closed';

/** One frame on the wire, as the `frame` event reports it (a console's frame log). */
export interface FrameLogEntry {
  direction: 'in' | 'out';
  /** The frame as sent or received. */
  text: string;
  /** The parsed frame; missing for text that is no frame of the protocol. */
  frame?: LlmServerFrame | LlmClientFrame;
  at: Date;
}

export type SessionChangeReason =
  /** `connect()` gave the first session. */
  | 'connected'
  /** `startSession()` without an id. */
  | 'started'
  /** `startSession(id)`, or a reconnection that resumed the previous session. */
  | 'resumed'
  /** `endSession()`: the old session is gone, this is the new one. */
  | 'ended'
  /** Another connection resumed this client's session; the gateway gave this one a new session. */
  | 'resumed_elsewhere'
  /** The gateway's session store no longer had this client's session (Redis lost its data); the gateway gave it a new one. */
  | 'lost'
  /** After a reconnection the previous session could not be resumed (expired, gateway restarted). */
  | 'resume_failed';

/** The gateway's reasons for moving a connection to a new session unasked (`status connected {reason}`), as the client names them. */
const MOVED_BY_GATEWAY = { session_resumed_elsewhere: 'resumed_elsewhere', session_lost: 'lost' } as const satisfies Record<string, SessionChangeReason>;

export interface SessionChange {
  sessionId: string;
  previousSessionId?: string;
  reason: SessionChangeReason;
  /** Why the previous session could not be resumed (`resume_failed`). */
  error?: LlmGatewayError;
}

/**
 * The client's events: one per server frame type (pushed frames included: they carry `origin:
 * "push"`), plus the pushes, told apart from this client's turns, and the connection's life.
 */
export interface LlmGatewayClientEvents {
  status: StatusFrame;
  llm_response: LlmResponseFrame;
  tool_call: ToolCallFrame;
  tool_callback: ToolCallbackFrame;
  tools_registered: ToolsRegisteredFrame;
  /** Every `error` frame, whether or not it also failed a request. */
  error: ErrorFrame;
  /** A sentence of a streaming turn of this client's, ready to speak (`configure({stream: true})`). */
  sentence: { turnId: string; content: string; seq: number };
  /**
   * The gateway's own speech, which no `sendText` asked for (a reminder, an agent's message, a
   * turn the gateway ran for the device): each pushed answer, once. It never settles a request
   * of this client's.
   */
  push: PushedAnswer;
  /** A sentence of a pushed turn, ready to speak, before its `push` (streaming on). */
  pushSentence: PushSentence;
  pong: PongFrame;
  /** Every frame sent or received. */
  frame: FrameLogEntry;
  state: ConnectionState;
  session: SessionChange;
  disconnected: { code: number; reason: string; willReconnect: boolean };
  reconnecting: { attempt: number; delayMs: number };
}

const DEFAULT_TOOL_TIMEOUT_MS = 25_000;
const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
const DEFAULT_PING_TIMEOUT_MS = 10_000;
/** How long `close()` waits for the gateway's close frame before it stops waiting. */
const CLOSE_WAIT_MS = 3_000;
const NORMAL_CLOSURE = 1000;

/**
 * A client of the gateway's LLM WebSocket API (the voice assistant's protocol): one connection,
 * one session at a time, device tools answered by handlers.
 *
 * @example
 * ```ts
 * const client = new LlmGatewayClient({ url: 'ws://localhost:9400' });
 * await client.connect();
 * console.log(await client.sendText('What time is it?'));
 * await client.close();
 * ```
 */
export class LlmGatewayClient extends TypedEmitter<LlmGatewayClientEvents> {
  readonly url: string;
  private readonly token?: string;
  private readonly tokenIn?: 'header' | 'query';
  private readonly WebSocketClass?: WebSocketConstructor;
  private readonly reconnection?: ReconnectPolicy;
  private readonly connectTimeoutMs: number;
  private readonly pipeline = new RequestPipeline((frame) => this.sendNow(frame));
  private readonly tools: ToolRunner;
  private readonly pushes = new PushTracker({
    sentence: (sentence) => this.emit('pushSentence', sentence),
    answer: (answer) => this.emit('push', answer),
    ended: (turnId) => this.tools.abandonTurn(turnId, 'The pushed turn ended'),
  });
  private currentState: ConnectionState = 'idle';
  private currentSession?: string;
  private settings: ConfigureSettings = {};
  private turnCounter = 0;
  private socket?: WebSocketLike;
  private socketClosed: Promise<void> = Promise.resolve();
  private reconnectAttempt = 0;
  private reconnectTimer?: ReturnType<typeof setTimeout>;
  private closing?: Promise<void>;

  constructor(options: LlmGatewayClientOptions) {
    super();
    let url: URL;
    try {
      url = new URL(options.url);
    } catch {
      throw new TypeError(`url must be an absolute ws:// or wss:// URL, got ${JSON.stringify(options.url)}`);
    }
    if (url.protocol !== 'ws:' && url.protocol !== 'wss:') {
      throw new TypeError(`url must be a ws:// or wss:// URL, got ${JSON.stringify(options.url)}`);
    }
    this.url = url.toString();
    this.token = options.token || undefined;
    this.tokenIn = options.tokenIn;
    this.WebSocketClass = options.WebSocket;
    this.reconnection = options.reconnect === false ? undefined : reconnectPolicy(options.reconnect === true ? {} : options.reconnect);
    this.connectTimeoutMs = positive(options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS, 'connectTimeoutMs');
    this.tools = new ToolRunner((frame) => this.sendNow(frame), positive(options.toolTimeoutMs ?? DEFAULT_TOOL_TIMEOUT_MS, 'toolTimeoutMs'));
  }

  get state(): ConnectionState {
    return this.currentState;
  }

  /** The session this connection speaks in; `undefined` before `connect()`. */
  get sessionId(): string | undefined {
    return this.currentSession;
  }

  /** Names of the device tools the gateway accepted and this client answers. */
  get registeredTools(): string[] {
    return this.tools.names;
  }

  /** Opens the connection; resolves with the session the gateway gave it. */
  async connect(): Promise<string> {
    if (this.currentState !== 'idle' && this.currentState !== 'closed') {
      throw new LlmGatewayError('CONNECT_FAILED', `connect() called while the client is ${this.currentState}`);
    }
    this.setState('connecting');
    try {
      const sessionId = await this.open();
      if (!this.isIn('connecting')) throw new LlmGatewayError('CLIENT_CLOSED', 'The client was closed');
      this.currentSession = sessionId;
      this.reconnectAttempt = 0;
      this.setState('open');
      this.emit('session', { sessionId, reason: 'connected' });
      this.pipeline.setOpen(true);
      return sessionId;
    } catch (error) {
      if (this.isIn('connecting')) this.setState('closed');
      this.pipeline.failAll(error as LlmGatewayError);
      throw error;
    }
  }

  /**
   * One turn: sends what the user said and resolves with the assistant's answer (cleaned for
   * speech unless `configure({clean_response: false})`). Device tools the model calls meanwhile
   * are answered by their handlers. Rejects with the gateway's code (`LLM_ERROR`, `TIMEOUT`,
   * `TOOL_RESULT_TIMEOUT`, `SESSION_ERROR`...) when the turn fails, and with `TURN_CANCELLED`
   * when it was cancelled ({@link cancel}, or barge-in).
   */
  async sendText(text: string, callbacks: TurnCallbacks = {}): Promise<string> {
    const answer = await this.sendTurn(text, callbacks);
    if (answer.cancelled) throw new LlmGatewayError('TURN_CANCELLED', `Turn ${answer.turnId} was cancelled`);
    return answer.content;
  }

  /**
   * One turn, told in full: its id, its answer, its sentences as they came (`onSentence` hears
   * each at once, with streaming on), the tool calls and the timing; a cancelled turn resolves
   * with `cancelled: true` and what was said of it. With `configure({barge_in: true})` it is sent
   * at once and the gateway cancels the turns still running; otherwise it waits its turn.
   */
  async sendTurn(text: string, callbacks: TurnCallbacks = {}): Promise<TurnAnswer> {
    checkText(text);
    const turnId = `turn-${++this.turnCounter}-${Math.random().toString(36).slice(2, 8)}`;
    const onSentence = (sentence: string, seq: number) => {
      this.emit('sentence', { turnId, content: sentence, seq });
      callbacks.onSentence?.(sentence, seq);
    };
    const turn = new TurnRequest(
      { type: 'text_input', text, turn_id: turnId },
      { onSentence },
      () => this.tools.abandonTurn(turnId, 'The turn ended'),
      this.settings.barge_in === true,
    );
    return this.request(turn);
  }

  /**
   * Stops the running turn (or the one `turnId` names): the gateway aborts the model and the
   * tools, and the turn ends `cancelled`. `spoken` is the text the device actually played: the
   * session's history keeps only that of the answer. Resolves once the request is sent.
   */
  async cancel(options: { turnId?: string; spoken?: string } = {}): Promise<void> {
    const frame: CancelFrame = { type: 'cancel' };
    if (options.turnId !== undefined) frame.turn_id = checkSessionId(options.turnId, 'turn id');
    if (options.spoken !== undefined) {
      if (typeof options.spoken !== 'string') throw new TypeError('spoken must be a string');
      frame.spoken = options.spoken;
    }
    await this.request(new CancelRequest(frame));
  }

  /**
   * Registers device tools; the gateway offers them to the model (unless `visibility:
   * "agents"`) and to agents (unless `"model"`), and their handlers answer the calls. Resolves
   * with each tool's registration: a tool the gateway refused (`status: "failed"`, with `error`
   * and `code`) is not kept. Kept tools are registered again after a reconnection.
   */
  async registerTools(tools: ClientTool[]): Promise<ToolRegistration[]> {
    checkTools(tools);
    const definitions = tools.map(definitionOf);
    const answer = await this.request(new RegisterToolsRequest({ type: 'register_tools', tools: definitions }));
    answer.tools.forEach((registration, index) => {
      const tool = tools[index];
      if (registration.status === 'registered' && tool?.name === registration.name) this.tools.accept(tool);
    });
    return answer.tools;
  }

  /**
   * Changes the session's settings (and this connection's speech cleaning). Values are checked
   * here as the gateway checks them (a TypeError names each bad one); the gateway does not
   * acknowledge success, so this resolves once the request is sent. The settings are sent again
   * after a reconnection.
   */
  async configure(settings: ConfigureSettings): Promise<void> {
    const checked = checkSettings(settings);
    await this.request(new ConfigureRequest({ type: 'configure', ...checked }));
    this.settings = { ...this.settings, ...checked };
  }

  /** Resumes session `sessionId` (one this client's token created), or starts a new one; resolves with its id. */
  async startSession(sessionId?: string): Promise<string> {
    const frame: StartSessionFrame = { type: 'start_session' };
    if (sessionId !== undefined) frame.session_id = checkSessionId(sessionId);
    const previous = this.currentSession;
    const id = await this.request(new StartSessionRequest(frame));
    this.changeSession({ sessionId: id, previousSessionId: previous, reason: sessionId === undefined ? 'started' : 'resumed' });
    return id;
  }

  /** Deletes the session (its history is gone); resolves with the new session the gateway gave. */
  async endSession(): Promise<string> {
    const previous = this.currentSession;
    const id = await this.request(new EndSessionRequest());
    this.changeSession({ sessionId: id, previousSessionId: previous, reason: 'ended' });
    return id;
  }

  /**
   * Resolves with the round trip in whole milliseconds (a timer's sub-millisecond digits say
   * nothing over a network); rejects with PING_TIMEOUT when no `pong` comes in time.
   */
  async ping(timeoutMs = DEFAULT_PING_TIMEOUT_MS): Promise<number> {
    const started = performance.now();
    const request = new PingRequest();
    const timer = setTimeout(() => request.reject(new LlmGatewayError('PING_TIMEOUT', `No pong within ${timeoutMs} ms`)), positive(timeoutMs, 'timeoutMs'));
    try {
      await this.request(request);
      return Math.round(performance.now() - started);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Closes the connection for good: no reconnection, pending requests fail with CLIENT_CLOSED,
   * running tool handlers are aborted. Resolves once the socket is closed (or after a few
   * seconds if the gateway does not answer the close frame). `connect()` may be called again.
   */
  close(): Promise<void> {
    if (this.currentState === 'idle' || this.currentState === 'closed') return Promise.resolve();
    this.closing ??= this.shutDown();
    return this.closing;
  }

  private async shutDown(): Promise<void> {
    this.setState('closing');
    clearTimeout(this.reconnectTimer);
    this.reconnectTimer = undefined;
    this.pipeline.setOpen(false);
    this.pipeline.failAll(new LlmGatewayError('CLIENT_CLOSED', 'The client was closed'));
    this.tools.abandonAll('The client was closed');
    this.socket?.close(NORMAL_CLOSURE, 'Client closed');
    await waitAtMost(this.socketClosed, CLOSE_WAIT_MS);
    this.socket = undefined;
    this.closing = undefined;
    this.setState('closed');
  }

  private request<T>(request: PendingRequest<T>): Promise<T> {
    const state = this.currentState;
    if (state === 'idle' || state === 'closed' || state === 'closing') {
      return Promise.reject(new LlmGatewayError('NOT_CONNECTED', `The client is ${state}: call connect() first`));
    }
    return this.pipeline.add(request);
  }

  /**
   * Opens a socket and waits for the gateway's `status connected`; resolves with its session.
   * From then on the socket is the client's.
   */
  private async open(): Promise<string> {
    const { WebSocket, sendsHeaders } = await resolveWebSocket(this.WebSocketClass);
    // close() may have run while the WebSocket class was loading.
    if (!this.isIn('connecting') && !this.isIn('reconnecting')) throw new LlmGatewayError('CLIENT_CLOSED', 'The client was closed');
    const url = new URL(this.url);
    const tokenIn = this.tokenIn ?? (sendsHeaders ? 'header' : 'query');
    if (this.token && tokenIn === 'query') url.searchParams.set('token', this.token);
    const socket =
      this.token && tokenIn === 'header'
        ? new WebSocket(url.toString(), undefined, { headers: { Authorization: `Bearer ${this.token}` } })
        : new WebSocket(url.toString());
    let markClosed!: () => void;
    this.socketClosed = new Promise((resolve) => (markClosed = resolve));
    this.socket = socket;

    return new Promise<string>((resolve, reject) => {
      let settled = false;
      let lastProblem = '';
      const fail = (problem: string) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (socket.readyState === CONNECTING || socket.readyState === OPEN) socket.close(NORMAL_CLOSURE, 'No session');
        reject(
          this.currentState === 'closing'
            ? new LlmGatewayError('CLIENT_CLOSED', 'The client was closed')
            : new LlmGatewayError('CONNECT_FAILED', `${problem}${lastProblem ? `: ${lastProblem}` : ''}`),
        );
      };
      const timer = setTimeout(() => fail(`No session from the gateway within ${this.connectTimeoutMs} ms`), this.connectTimeoutMs);
      socket.onerror = (event: { message?: unknown }) => {
        if (typeof event?.message === 'string' && event.message) lastProblem = event.message;
      };
      socket.onclose = (event: { code: number; reason: string }) => {
        markClosed();
        if (this.socket === socket) this.socket = undefined;
        fail(`Connection closed before the gateway gave a session (${closeDescription(event)})`);
      };
      socket.onmessage = (event: { data: unknown }) => {
        const frame = this.receive(messageText(event.data));
        if (frame?.type === 'error') lastProblem = `${frame.code}: ${frame.message}`;
        if (frame?.type !== 'status' || frame.status !== 'connected' || settled) return;
        settled = true;
        clearTimeout(timer);
        socket.onclose = (closed: { code: number; reason: string }) => {
          markClosed();
          this.onSocketClosed(socket, closed);
        };
        resolve(String(frame.data.session_id));
      };
    });
  }

  /**
   * Logs and announces a frame, then gives it to whoever it concerns. A push's frames never
   * reach the requests, which are not matched by turn id: a push's `status idle` or `error`
   * would otherwise end the one that waits (a resume, an `end_session`).
   */
  private receive(text: string): LlmServerFrame | undefined {
    const frame = parseServerFrame(text);
    this.emit('frame', { direction: 'in', text, frame, at: new Date() });
    if (!frame) return undefined;
    this.emit(frame.type, frame as never);
    if (frame.type === 'tool_callback') {
      void this.tools.run(frame);
    } else if (isPush(frame)) {
      this.pushes.offer(frame);
    } else if (frame.type === 'status' && frame.status === 'connected' && typeof frame.data.reason === 'string' && frame.data.reason in MOVED_BY_GATEWAY) {
      const reason = MOVED_BY_GATEWAY[frame.data.reason as keyof typeof MOVED_BY_GATEWAY];
      this.changeSession({ sessionId: String(frame.data.session_id), previousSessionId: this.currentSession, reason });
    } else {
      this.pipeline.offer(frame);
    }
    return frame;
  }

  private onSocketClosed(socket: WebSocketLike, event: { code: number; reason: string }): void {
    if (this.socket !== socket) return;
    this.socket = undefined;
    this.pipeline.setOpen(false);
    this.tools.abandonAll('The connection closed');
    this.pushes.clear();
    if (this.currentState === 'closing') return;
    const lost = new LlmGatewayError('CONNECTION_LOST', `The connection closed (${closeDescription(event)})`);
    this.pipeline.failSent(lost);
    // A newer connection of the same device took this one's place: reconnecting would only take it back.
    const willReconnect = this.reconnection !== undefined && event.code !== CLOSE_REPLACED;
    this.emit('disconnected', { code: event.code, reason: event.reason, willReconnect });
    if (willReconnect) {
      this.scheduleReconnect();
    } else {
      this.pipeline.failAll(lost);
      this.setState('closed');
    }
  }

  private scheduleReconnect(): void {
    const policy = this.reconnection!;
    const attempt = ++this.reconnectAttempt;
    if (attempt > policy.maxAttempts) {
      this.pipeline.failAll(new LlmGatewayError('RECONNECT_FAILED', `Could not reconnect in ${policy.maxAttempts} attempt(s)`));
      this.setState('closed');
      return;
    }
    const delayMs = backoffDelay(attempt, policy);
    this.setState('reconnecting');
    this.emit('reconnecting', { attempt, delayMs });
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      void this.reconnect();
    }, delayMs);
  }

  private async reconnect(): Promise<void> {
    let freshSession: string;
    try {
      freshSession = await this.open();
    } catch {
      if (this.currentState === 'reconnecting') this.scheduleReconnect();
      return;
    }
    if (this.currentState !== 'reconnecting') return;
    this.reconnectAttempt = 0;
    this.restore(freshSession);
    this.setState('open');
    this.pipeline.setOpen(true);
  }

  /**
   * Puts the new connection where the old one was, before any request that waited: resumes the
   * previous session, registers the kept tools again, re-applies the settings (cleaning for
   * speech is per connection; a session that could not be resumed has the defaults).
   */
  private restore(freshSession: string): void {
    const previous = this.currentSession;
    const restoring: PendingRequest[] = [];
    if (previous) {
      const resume = new StartSessionRequest({ type: 'start_session', session_id: previous });
      resume.promise.then(
        (sessionId) => this.changeSession({ sessionId, previousSessionId: previous, reason: 'resumed' }),
        (error: LlmGatewayError) => {
          // CONNECTION_LOST: the next connection tries again; a refusal leaves the fresh session.
          if (error.frame) this.changeSession({ sessionId: freshSession, previousSessionId: previous, reason: 'resume_failed', error });
        },
      );
      restoring.push(resume);
    } else {
      this.currentSession = freshSession;
    }
    const definitions = this.tools.definitions;
    if (definitions.length > 0) {
      const registration = new RegisterToolsRequest({ type: 'register_tools', tools: definitions });
      registration.promise.then(
        (answer) => answer.tools.filter((tool) => tool.status !== 'registered').forEach((tool) => this.tools.forget(tool.name)),
        (error: LlmGatewayError) => {
          if (error.frame) definitions.forEach((tool) => this.tools.forget(tool.name));
        },
      );
      restoring.push(registration);
    }
    if (Object.keys(this.settings).length > 0) restoring.push(new ConfigureRequest({ type: 'configure', ...this.settings }));
    for (const request of restoring.reverse()) void this.pipeline.add(request, true);
  }

  private changeSession(change: SessionChange): void {
    this.currentSession = change.sessionId;
    this.emit('session', change);
  }

  /** Sends a frame if the socket is open; a frame for a closed socket is dropped (its request fails when the close is seen). */
  private sendNow(frame: LlmClientFrame): void {
    const socket = this.socket;
    if (!socket || socket.readyState !== OPEN) return;
    const text = JSON.stringify(frame);
    socket.send(text);
    this.emit('frame', { direction: 'out', text, frame, at: new Date() });
  }

  /** The state now (a method, so the compiler does not keep a narrowing across an await). */
  private isIn(state: ConnectionState): boolean {
    return this.currentState === state;
  }

  private setState(state: ConnectionState): void {
    if (state === this.currentState) return;
    this.currentState = state;
    this.emit('state', state);
  }
}

function positive(value: number, name: string): number {
  if (!(typeof value === 'number' && value > 0 && Number.isFinite(value))) {
    throw new RangeError(`${name} must be a positive number of milliseconds, got ${String(value)}`);
  }
  return value;
}

function checkTools(tools: unknown): void {
  if (!Array.isArray(tools) || tools.length === 0) throw new TypeError('tools must be a non-empty array');
  tools.forEach((tool: Partial<ClientTool>, index) => {
    const where = `tools[${index}]${typeof tool?.name === 'string' ? ` ("${tool.name}")` : ''}`;
    if (tool === null || typeof tool !== 'object') throw new TypeError(`${where} must be an object`);
    if (typeof tool.name !== 'string') throw new TypeError(`${where}.name must be a string`);
    if (typeof tool.description !== 'string') throw new TypeError(`${where}.description must be a string`);
    if (tool.parameters === null || typeof tool.parameters !== 'object' || Array.isArray(tool.parameters)) {
      throw new TypeError(`${where}.parameters must be a JSON Schema object`);
    }
    if (tool.visibility !== undefined && !TOOL_VISIBILITIES.includes(tool.visibility)) {
      throw new TypeError(`${where}.visibility must be one of ${TOOL_VISIBILITIES.map((v) => `"${v}"`).join(', ')}`);
    }
    if (typeof tool.handler !== 'function') throw new TypeError(`${where}.handler must be a function`);
  });
}

/** The gateway's close code for a device connection replaced by a newer one of the same `Device-Id`. */
export const CLOSE_REPLACED = 4409;

function closeDescription(event: { code: number; reason: string }): string {
  return event.reason ? `${event.code} ${event.reason}` : String(event.code);
}

/** Waits for `promise`, but no longer than `ms`; leaves no timer behind. */
async function waitAtMost(promise: Promise<void>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([promise, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}
