import { randomBytes, randomUUID } from 'crypto';
import { performance } from 'perf_hooks';
import { RawData, WebSocket } from 'ws';
import { SpeakOptions } from '../espeak';
import { speechAt16k, uplinkPackets } from '../speech-packets';
import { BoardIdentity, userAgent } from './board-info';
import { isJsonObject, JsonObject, objectItem, valueInt } from './cjson';
import { DeviceMcpServer, McpMisbehaviour } from './device-mcp-server';
import {
  abortMessage,
  helloMessage,
  ListeningMode,
  listenStartMessage,
  listenStopMessage,
  mcpMessage,
  TextFontCapability,
  wakeWordDetectedMessage,
} from './device-messages';
import { DeviceSpeaker, PlaybackOutcome } from './device-speaker';
import { BoardState, boardTools, commonTools, DeviceTool, userOnlyTools } from './device-tools';
import { decodeFrame, encodeFrame, FramingError, XiaozhiProtocolVersion } from './framing';
import { MessageInbox, ReceivedMessage } from './message-inbox';
import { emptyConfiguration, OtaAnswer, requestActivation, requestOta, spokenActivation, storeOtaAnswer, StoredConfiguration } from './ota-request';

export type { ListeningMode, TextFontCapability } from './device-messages';
export type { DeviceTool, ToolInputSchema, ToolPropertySchema, ToolResult } from './device-tools';
export type { McpMisbehaviour } from './device-mcp-server';
export type { ReceivedMessage } from './message-inbox';
export type { OtaAnswer, StoredConfiguration } from './ota-request';

/** The firmware's states a server can tell apart (device_state.h), reached by its transitions only. */
export type DeviceState = 'idle' | 'connecting' | 'listening' | 'speaking';

/** Echo cancellation of the build: with it, the default listening mode is realtime; `server` also stamps uplink frames for the server's. */
export type AecMode = 'off' | 'device' | 'server';

/** What became of a binary frame the server sent. */
export type AudioFate = 'played' | 'dropped-not-speaking' | Exclude<PlaybackOutcome, 'queued'> | 'cut';

export interface ReceivedAudioPacket {
  atMs: number;
  payload: Uint8Array;
  /** The header's type (versions 2 and 3); the firmware plays the frame whatever it says. */
  frameType: number;
  /** Version 2: the header's timestamp. */
  timestamp: number;
  /** `played` counts what is queued to play; `cut` what a later decoder reset dropped before it played. */
  fate: AudioFate;
}

export interface TtsSentence {
  text: string;
  atMs: number;
  packets: ReceivedAudioPacket[];
}

/** One `tts start` to `tts stop`, as the server sent it. */
export interface TtsTurn {
  startedAtMs: number;
  /** Frames between `start` and the first `sentence_start`. */
  leadingPackets: ReceivedAudioPacket[];
  sentences: TtsSentence[];
  stoppedAtMs?: number;
}

export interface DeviceAlert {
  status: string;
  message: string;
  emotion: string;
}

/** What the device took from the server hello (the firmware's defaults where it said nothing). */
export interface ServerHello {
  sessionId: string;
  sampleRate: number;
  frameDurationMs: number;
  message: JsonObject;
}

export interface AudioStats {
  received: number;
  played: number;
  droppedNotSpeaking: number;
  droppedQueueFull: number;
  undecodable: number;
  cut: number;
  /** Frames too short for their header, or whose payload size runs past their end. */
  malformed: number;
}

export interface XiaozhiDeviceOptions {
  /** MAC address; a random locally administered one by default. */
  deviceId?: string;
  clientId?: string;
  /** BOARD_NAME (`bread-compact-wifi`). */
  board?: string;
  /** Application version (`2.4.2`, the firmware this simulator follows). */
  firmwareVersion?: string;
  /** `zh-CN`, the firmware's default build language. */
  language?: string;
  serialNumber?: string;
  /** The eFuse HMAC key (key 0) of a board with a serial number: what it answers activation challenges with. */
  activationKey?: Buffer;
  /** Binary framing when the OTA answer sets no `websocket.version`: 1, like the firmware. */
  protocolVersion?: XiaozhiProtocolVersion;
  features?: { mcp?: boolean };
  aec?: AecMode;
  /** The built-in 14 px 1 bpp font of a breadboard build by default; null for a device without glyph push. */
  textFont?: TextFontCapability | null;
  /** Uplink audio of the hello: 16 kHz and 60 ms in every firmware build. */
  audio?: { sampleRate?: number; frameDurationMs?: number };
  helloTimeoutMs?: number;
  mcp?: {
    /** Board tools, listed after the common ones. */
    tools?: DeviceTool[];
    /** The common, board and user-only tools of a simulated board (true by default). */
    defaultTools?: boolean;
    pageSize?: number;
    maxPayloadBytes?: number;
    misbehave?: McpMisbehaviour;
  };
}

/** OpenAudioChannel failed: the firmware shows an error and goes idle. */
export class XiaozhiConnectionError extends Error {
  constructor(
    readonly reason: 'not-connected' | 'refused' | 'hello-timeout' | 'closed' | 'crashed',
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

const TRANSITIONS: Record<DeviceState, readonly DeviceState[]> = {
  idle: ['connecting', 'listening', 'speaking'],
  connecting: ['idle', 'listening'],
  listening: ['speaking', 'idle'],
  speaking: ['listening', 'idle'],
};

/** The network component refuses to send a frame over this (esp-ml307 WebSocket::Send). */
const MAX_SENT_FRAME_BYTES = 65_535;
/** Audio timestamps kept for server-side echo cancellation (MAX_TIMESTAMPS_IN_QUEUE). */
const MAX_ECHO_TIMESTAMPS = 3;
const REBOOT_DELAY_MS = 1000;

const DEFAULT_TEXT_FONT: TextFontCapability = { bundle: 'noto-v1', charset: 'basic', size: 14, bpp: 1 };

/**
 * A xiaozhi-esp32 device on the wire, for tests of a server: it requests its configuration,
 * opens the WebSocket with the firmware's headers and hello, streams microphone packets and
 * plays what it receives under the firmware's state machine (main/application.cc), and serves
 * its MCP tools. Everything it received is kept for assertions.
 */
export class XiaozhiDevice {
  readonly identity: BoardIdentity;
  readonly board = new BoardState();
  readonly configuration: StoredConfiguration = emptyConfiguration();
  readonly mcp: DeviceMcpServer;
  readonly inbox = new MessageInbox();
  readonly audio: ReceivedAudioPacket[] = [];
  readonly turns: TtsTurn[] = [];
  readonly sttTexts: string[] = [];
  readonly emotions: string[] = [];
  readonly alerts: DeviceAlert[] = [];
  /** Text frames the device sent, in order. */
  readonly sent: string[] = [];
  /** Text frames the firmware logs and drops: not JSON, or no string `type`. */
  readonly ignoredTexts: string[] = [];
  /** Set when the server sent what the firmware crashes on; the device then dropped the connection. */
  crash?: string;
  /** How the last connection ended. */
  closeEvent?: { code: number; reason: string; atMs: number };

  private socket?: WebSocket;
  private channelOpen = false;
  private currentState: DeviceState = 'idle';
  private mode: ListeningMode = 'auto';
  private micOpen = false;
  private popupOnListening = false;
  private pendingListenStart?: NodeJS.Timeout;
  private version: number;
  private session = '';
  private serverSampleRate = 24_000;
  private serverFrameDurationMs = 60;
  private helloWait?: { resolve(hello: ServerHello): void; reject(error: Error): void; timer: NodeJS.Timeout };
  private readonly speaker: DeviceSpeaker;
  private readonly echoTimestamps: number[] = [];
  private readonly sleeps = new Map<NodeJS.Timeout, () => void>();
  private readonly stateWaiters = new Set<{ state: DeviceState; resolve(): void; reject(error: Error): void; timer: NodeJS.Timeout }>();
  private malformedFrames = 0;
  private readonly epoch = performance.now();
  private closed = false;

  constructor(private readonly options: XiaozhiDeviceOptions = {}) {
    this.identity = {
      deviceId: options.deviceId ?? randomMac(),
      clientId: options.clientId ?? randomUUID(),
      board: options.board ?? 'bread-compact-wifi',
      firmwareVersion: options.firmwareVersion ?? '2.4.2',
      language: options.language ?? 'zh-CN',
      serialNumber: options.serialNumber,
    };
    this.version = options.protocolVersion ?? 1;
    this.speaker = new DeviceSpeaker(() => this.nowMs());
    const mcpOptions = options.mcp ?? {};
    const defaults = mcpOptions.defaultTools ?? true;
    const tools = [
      ...(defaults ? [...commonTools(this.board), ...boardTools(this.board)] : []),
      ...(mcpOptions.tools ?? []),
      ...(defaults ? userOnlyTools(this.board, this.identity, () => this.rebootSoon()) : []),
    ];
    this.mcp = new DeviceMcpServer(
      {
        serverName: this.identity.board,
        serverVersion: this.identity.firmwareVersion,
        tools,
        pageSize: mcpOptions.pageSize,
        maxPayloadBytes: mcpOptions.maxPayloadBytes,
        misbehave: mcpOptions.misbehave,
      },
      (payload) => this.sendText(mcpMessage(this.session, payload)),
    );
  }

  get userAgent(): string {
    return userAgent(this.identity);
  }

  get state(): DeviceState {
    return this.currentState;
  }

  get listeningMode(): ListeningMode {
    return this.mode;
  }

  /** Whether microphone audio goes to the server now (the firmware's voice processing is on). */
  get microphoneOpen(): boolean {
    return this.micOpen;
  }

  /** The audio channel is open: connected, and the server's hello came. */
  get connected(): boolean {
    return this.channelOpen && this.socket?.readyState === WebSocket.OPEN;
  }

  get sessionId(): string {
    return this.session;
  }

  /** The binary framing in use: the OTA answer's `websocket.version` when it set one. */
  get protocolVersion(): number {
    return this.version;
  }

  /** What the server's audio is decoded as: its hello's `audio_params`, or the firmware's 24 kHz / 60 ms. */
  get serverAudio(): { sampleRate: number; frameDurationMs: number } {
    return { sampleRate: this.serverSampleRate, frameDurationMs: this.serverFrameDurationMs };
  }

  /** Every JSON message received, in order. */
  get messages(): ReceivedMessage[] {
    return this.inbox.received;
  }

  /** Milliseconds since the device was made: the clock of every `atMs`. */
  nowMs(): number {
    return performance.now() - this.epoch;
  }

  /**
   * The boot-time OTA request (Ota::CheckVersion). A 200 JSON answer is stored as the firmware
   * stores it: the `websocket` url, token and version are what {@link connect} uses.
   */
  async requestConfiguration(otaUrl: string, method: 'POST' | 'GET' = 'POST'): Promise<OtaAnswer> {
    const answer = await requestOta(otaUrl, method, this.identity);
    storeOtaAnswer(this.configuration, answer);
    return answer;
  }

  /** What the device shows and speaks of its last answer's `activation` (Application::ShowActivationCode), if it has a code. */
  activationPrompt(): { message: string; digits: string[] } | undefined {
    return spokenActivation(this.configuration.activation);
  }

  /**
   * One Ota::Activate poll of the last answer's challenge: its HTTP status (202 waiting, 200 bound).
   * The firmware polls only when the answer had a challenge.
   */
  async activate(otaUrl: string): Promise<OtaAnswer> {
    const challenge = this.configuration.activation ? objectItem(this.configuration.activation, 'challenge') : undefined;
    if (typeof challenge !== 'string') throw new Error('No activation challenge: the firmware would not poll');
    return requestActivation(otaUrl, this.identity, challenge, this.options.activationKey);
  }

  /**
   * WebsocketProtocol::OpenAudioChannel: connects with the firmware's headers, sends the hello
   * and waits for the server's (10 s by default). A hello whose transport is another string is
   * ignored, as the firmware ignores it, so the wait times out. After a timeout the socket stays
   * open, as the firmware leaves it until its next attempt. The device is idle once connected.
   * `Host` carries no port, as the firmware's WebSocket writes it.
   */
  connect(url?: string, token?: string): Promise<ServerHello> {
    if (this.closed) return Promise.reject(new Error('The device is closed'));
    if (this.currentState !== 'idle' || this.connected) return Promise.reject(new Error(`connect() while ${this.connected ? 'connected' : this.currentState}`));
    const stored = this.configuration.websocket;
    if (url === undefined && this.configuration.hasMqtt)
      return Promise.reject(new Error('The OTA answer had an `mqtt` section: the firmware would use MQTT + UDP, not this WebSocket'));
    const target = url ?? (typeof stored.url === 'string' ? stored.url : '');
    if (!target) return Promise.reject(new Error('No WebSocket URL: pass one or call requestConfiguration() first'));
    const credential = token ?? (typeof stored.token === 'string' ? stored.token : '');
    if (typeof stored.version === 'number' && stored.version !== 0) this.version = stored.version;
    this.dropSocket();
    this.setState('connecting');
    const headers: Record<string, string> = { Host: new URL(target).hostname };
    if (credential) headers.Authorization = credential.includes(' ') ? credential : `Bearer ${credential}`;
    headers['Protocol-Version'] = String(this.version);
    headers['Device-Id'] = this.identity.deviceId;
    headers['Client-Id'] = this.identity.clientId;
    const socket = new WebSocket(target, { headers, perMessageDeflate: false, skipUTF8Validation: true, handshakeTimeout: 10_000 });
    this.socket = socket;
    return new Promise<ServerHello>((resolve, reject) => {
      let failed = false;
      const fail = (error: XiaozhiConnectionError) => {
        if (failed) return;
        failed = true;
        if (this.helloWait) {
          clearTimeout(this.helloWait.timer);
          this.helloWait = undefined;
        }
        this.setState('idle');
        reject(error);
      };
      socket.once('unexpected-response', (_request, response) => {
        response.resume();
        socket.terminate();
        fail(new XiaozhiConnectionError('refused', `The server refused the upgrade with ${response.statusCode}`, response.statusCode));
      });
      socket.on('error', (error) => {
        if (!this.helloWait && this.socket === socket && this.currentState === 'connecting')
          fail(new XiaozhiConnectionError('not-connected', `Failed to connect to ${target}: ${error.message}`));
      });
      socket.once('open', () => {
        const timeoutMs = this.options.helloTimeoutMs ?? 10_000;
        this.helloWait = {
          resolve,
          reject: (error) => fail(error as XiaozhiConnectionError),
          timer: setTimeout(() => fail(new XiaozhiConnectionError('hello-timeout', `No server hello within ${timeoutMs} ms`)), timeoutMs),
        };
        this.sendText(this.hello());
      });
      socket.on('message', (data, isBinary) => (isBinary ? this.onBinary(toBuffer(data)) : this.onText(toBuffer(data).toString('utf8'))));
      socket.once('close', (code, reason) => this.onSocketClosed(socket, code, reason.toString()));
    });
  }

  /**
   * Starts listening in `mode` as the firmware's listening entry points do: while speaking it
   * first sends `abort` (push-to-talk); entering the listening state sends `listen start`
   * unless the microphone is already on (realtime), and in auto mode waits for playback to
   * drain first. Already listening: nothing is sent, as in the firmware.
   */
  listen(mode: ListeningMode): void {
    this.requireChannel();
    if (this.currentState === 'listening') return;
    if (this.currentState === 'speaking') this.sendText(abortMessage(this.session));
    this.mode = mode;
    this.setState('listening');
  }

  /** Application::HandleStopListeningEvent: `listen stop` and idle, when listening. */
  stopListening(): void {
    if (this.currentState !== 'listening') return;
    this.sendText(listenStopMessage(this.session));
    this.setState('idle');
  }

  /**
   * The wake word was heard. Idle: the wake word's audio (CONFIG_SEND_WAKE_WORD_DATA), then
   * `listen detect`, then listening in the default mode. Speaking or listening: `abort` with
   * reason `wake_word_detected`, then listening again in the default mode.
   */
  detect(wakeWord: string, wakeWordAudio: readonly Uint8Array[] = []): void {
    this.requireChannel();
    if (this.currentState === 'idle') {
      for (const packet of wakeWordAudio) this.sendBinary(encodeFrame(this.frameVersion(), packet));
      this.sendText(wakeWordDetectedMessage(this.session, wakeWord));
      this.mode = this.defaultListeningMode();
      this.setState('listening');
      return;
    }
    this.sendText(abortMessage(this.session, 'wake_word_detected'));
    if (this.currentState === 'listening') {
      this.sendText(listenStartMessage(this.session, this.defaultListeningMode()));
      this.resetDecoder();
      return;
    }
    this.popupOnListening = true;
    this.mode = this.defaultListeningMode();
    this.setState('listening');
  }

  /** Protocol::SendAbortSpeaking. The device keeps playing what it has until the server's `tts stop`. */
  abort(reason?: 'wake_word_detected'): void {
    this.requireChannel();
    this.sendText(abortMessage(this.session, reason));
  }

  /**
   * Microphone packets: each is sent only while the microphone is on (listening, or speaking in
   * realtime), the rest are withheld as a device's microphone audio is lost while it is off.
   * Paced, one packet per uplink frame duration, as a microphone produces them; unpaced, all at
   * once.
   */
  async sendAudio(packets: readonly Uint8Array[], options: { paced?: boolean } = {}): Promise<{ sent: number; withheld: number }> {
    const paced = options.paced ?? true;
    const frameMs = this.options.audio?.frameDurationMs ?? 60;
    const startedAt = this.nowMs();
    let sent = 0;
    for (let index = 0; index < packets.length; index++) {
      if (paced && index > 0) await this.sleep(startedAt + index * frameMs - this.nowMs());
      if (this.closed) break;
      if (!this.micOpen || !this.connected) continue;
      const frame = encodeFrame(this.frameVersion(), packets[index], { timestamp: this.nextUplinkTimestamp() });
      if (this.sendBinary(frame)) sent++;
    }
    return { sent, withheld: packets.length - sent };
  }

  /**
   * `text` spoken by espeak-ng between `beforeMs` and `afterMs` of silence, sent from the
   * microphone as {@link sendAudio} sends it (paced by default).
   */
  async say(
    text: string,
    options: { beforeMs?: number; afterMs?: number; paced?: boolean; speech?: SpeakOptions } = {},
  ): Promise<{ sent: number; withheld: number }> {
    const { packets } = uplinkPackets(await speechAt16k(text, options.speech), options.beforeMs ?? 300, options.afterMs ?? 900);
    return this.sendAudio(packets, { paced: options.paced });
  }

  /** Sends `data` as it is: a string as a text frame, bytes as a binary frame. */
  sendRaw(data: string | Uint8Array): void {
    if (this.socket?.readyState !== WebSocket.OPEN) throw new Error('Not connected');
    this.socket.send(data, { binary: typeof data !== 'string' });
  }

  /** The first message of `type` (matching `predicate`) not yet returned by next(), waiting up to `timeoutMs`. */
  next<T = any>(type: string, predicate?: (message: any) => boolean, timeoutMs = 5000): Promise<T> {
    return this.inbox.next<T>(type, predicate, timeoutMs);
  }

  /** Resolves when the device is in `state`. */
  waitForState(state: DeviceState, timeoutMs = 5000): Promise<void> {
    if (this.currentState === state) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const waiter = {
        state,
        resolve,
        reject,
        timer: setTimeout(() => {
          this.stateWaiters.delete(waiter);
          reject(new Error(`The device did not become ${state} within ${timeoutMs} ms; it is ${this.currentState}`));
        }, timeoutMs),
      };
      this.stateWaiters.add(waiter);
    });
  }

  /** Resolves when the connection has ended (at once if it has). */
  waitForClose(timeoutMs = 5000): Promise<{ code: number; reason: string; atMs: number }> {
    const socket = this.socket;
    if (!socket || socket.readyState === WebSocket.CLOSED) {
      return this.closeEvent ? Promise.resolve(this.closeEvent) : Promise.reject(new Error('Never connected'));
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        socket.off('close', onClose);
        reject(new Error(`The connection did not close within ${timeoutMs} ms`));
      }, timeoutMs);
      const onClose = () => {
        clearTimeout(timer);
        if (this.closeEvent) resolve(this.closeEvent);
      };
      socket.once('close', onClose);
    });
  }

  /** Every received frame decoded at the server hello's rate: what the speaker played or has queued. */
  playedPcm(): Int16Array {
    return this.speaker.playedPcm();
  }

  playedDurationMs(): number {
    return this.speaker.playedDurationMs();
  }

  audioStats(): AudioStats {
    const count = (fate: AudioFate) => this.audio.filter((packet) => packet.fate === fate).length;
    return {
      received: this.audio.length,
      played: count('played'),
      droppedNotSpeaking: count('dropped-not-speaking'),
      droppedQueueFull: count('decode-queue-full'),
      undecodable: count('undecodable') + count('longer-than-frame-duration'),
      cut: count('cut'),
      malformed: this.malformedFrames,
    };
  }

  /**
   * WebsocketProtocol::CloseAudioChannel: the connection is dropped without a close frame or a
   * goodbye (the firmware's WebSocket only disconnects its TCP connection) and the device goes idle.
   */
  disconnect(): void {
    this.dropSocket();
    this.channelOpen = false;
    this.setState('idle');
  }

  /** Disconnects and frees everything: decoder, timers, waits (which fail). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const socket = this.socket;
    this.disconnect();
    this.mcp.stop();
    this.speaker.free();
    this.cancelPendingListenStart();
    for (const [timer, wake] of this.sleeps) {
      clearTimeout(timer);
      wake();
    }
    this.sleeps.clear();
    for (const waiter of this.stateWaiters) {
      clearTimeout(waiter.timer);
      waiter.reject(new Error('The device closed'));
    }
    this.stateWaiters.clear();
    this.inbox.close('The device closed');
    if (socket && socket.readyState !== WebSocket.CLOSED) await new Promise((resolve) => socket.once('close', resolve));
  }

  private hello(): string {
    return helloMessage({
      version: this.version as XiaozhiProtocolVersion,
      serverAec: this.options.aec === 'server',
      mcp: this.options.features?.mcp ?? true,
      textFont: this.options.textFont === undefined ? DEFAULT_TEXT_FONT : this.options.textFont,
      sampleRate: this.options.audio?.sampleRate ?? 16_000,
      frameDurationMs: this.options.audio?.frameDurationMs ?? 60,
    });
  }

  private onText(text: string): void {
    let root: unknown;
    try {
      root = JSON.parse(text);
    } catch {
      root = undefined;
    }
    const type = objectItem(root, 'type');
    if (!isJsonObject(root) || typeof type !== 'string') {
      this.ignoredTexts.push(text);
      return;
    }
    this.inbox.add({ atMs: this.nowMs(), message: root });
    if (type === 'hello') this.onServerHello(root);
    else this.onJson(type, root);
  }

  /** WebsocketProtocol::ParseServerHello. */
  private onServerHello(root: JsonObject): void {
    const transport = objectItem(root, 'transport');
    if (typeof transport !== 'string') {
      return this.crashOn('a server hello whose `transport` is not a string: ParseServerHello reads its string through a null pointer');
    }
    if (transport !== 'websocket') return;
    const sessionId = objectItem(root, 'session_id');
    if (typeof sessionId === 'string') this.session = sessionId;
    const audioParams = objectItem(root, 'audio_params');
    if (isJsonObject(audioParams)) {
      const sampleRate = objectItem(audioParams, 'sample_rate');
      const frameDuration = objectItem(audioParams, 'frame_duration');
      if (typeof sampleRate === 'number') this.serverSampleRate = valueInt(sampleRate);
      if (typeof frameDuration === 'number') this.serverFrameDurationMs = valueInt(frameDuration);
    }
    this.speaker.configure(this.serverSampleRate, this.serverFrameDurationMs);
    const wait = this.helloWait;
    if (!wait) return;
    clearTimeout(wait.timer);
    this.helloWait = undefined;
    this.channelOpen = true;
    this.setState('idle');
    wait.resolve({ sessionId: this.session, sampleRate: this.serverSampleRate, frameDurationMs: this.serverFrameDurationMs, message: root });
  }

  /** Application's OnIncomingJson. */
  private onJson(type: string, root: JsonObject): void {
    const field = (name: string) => objectItem(root, name);
    if (type === 'tts') {
      const state = field('state');
      if (state === 'start') this.onTtsStart();
      else if (state === 'stop') this.onTtsStop();
      else if (state === 'sentence_start' && typeof field('text') === 'string')
        this.openTurn()?.sentences.push({ text: field('text') as string, atMs: this.nowMs(), packets: [] });
    } else if (type === 'stt') {
      if (typeof field('text') === 'string') this.sttTexts.push(field('text') as string);
    } else if (type === 'llm') {
      if (typeof field('emotion') === 'string') this.emotions.push(field('emotion') as string);
    } else if (type === 'mcp') {
      const payload = field('payload');
      if (isJsonObject(payload)) this.mcp.handle(payload);
    } else if (type === 'alert') {
      const [status, message, emotion] = [field('status'), field('message'), field('emotion')];
      if (typeof status === 'string' && typeof message === 'string' && typeof emotion === 'string') this.alerts.push({ status, message, emotion });
    } else if (type === 'system') {
      if (field('command') === 'reboot') this.disconnect();
    }
  }

  private onTtsStart(): void {
    this.turns.push({ startedAtMs: this.nowMs(), leadingPackets: [], sentences: [] });
    this.setState('speaking');
  }

  private onTtsStop(): void {
    const turn = this.openTurn();
    if (turn) turn.stoppedAtMs = this.nowMs();
    if (this.currentState !== 'speaking') return;
    this.setState(this.mode === 'manual' ? 'idle' : 'listening');
  }

  private openTurn(): TtsTurn | undefined {
    const last = this.turns[this.turns.length - 1];
    return last && last.stoppedAtMs === undefined ? last : undefined;
  }

  /** The audio callback: the firmware decodes a frame only while speaking. */
  private onBinary(data: Buffer): void {
    let frame;
    try {
      frame = decodeFrame(this.frameVersion(), data);
    } catch (error) {
      if (!(error instanceof FramingError)) throw error;
      this.malformedFrames++;
      return;
    }
    const packet: ReceivedAudioPacket = {
      atMs: this.nowMs(),
      payload: Uint8Array.from(frame.payload),
      frameType: frame.type,
      timestamp: frame.timestamp,
      fate: 'dropped-not-speaking',
    };
    this.audio.push(packet);
    const turn = this.openTurn();
    if (turn) (turn.sentences.length ? turn.sentences[turn.sentences.length - 1].packets : turn.leadingPackets).push(packet);
    if (this.currentState !== 'speaking') return;
    const outcome = this.speaker.accept(packet.payload, packet.timestamp, () => (packet.fate = 'cut'));
    packet.fate = outcome === 'queued' ? 'played' : outcome;
  }

  /** Application::HandleStateChangedEvent, for what a server sees. */
  private setState(next: DeviceState): void {
    if (next === this.currentState) return;
    if (!TRANSITIONS[this.currentState].includes(next)) return;
    this.currentState = next;
    this.cancelPendingListenStart();
    if (next === 'idle') {
      this.micOpen = false;
    } else if (next === 'speaking') {
      if (this.mode !== 'realtime') this.micOpen = false;
      this.resetDecoder();
    } else if (next === 'listening' && (this.popupOnListening || !this.micOpen)) {
      if (this.mode === 'auto' && !this.speaker.isIdle()) this.startListeningWhenDrained();
      else this.startListeningAudio();
    }
    for (const waiter of [...this.stateWaiters]) {
      if (waiter.state !== next) continue;
      clearTimeout(waiter.timer);
      this.stateWaiters.delete(waiter);
      waiter.resolve();
    }
  }

  /** Application::StartListeningAudio. */
  private startListeningAudio(): void {
    if (this.currentState !== 'listening') return;
    this.sendText(listenStartMessage(this.session, this.mode));
    this.micOpen = true;
    this.resetDecoder();
    this.popupOnListening = false;
  }

  /** Auto mode defers `listen start` until playback drains, so the end of the answer is not cut. */
  private startListeningWhenDrained(): void {
    this.pendingListenStart = setTimeout(
      () => {
        this.pendingListenStart = undefined;
        this.startListeningAudio();
      },
      Math.max(0, this.speaker.drainedAtMs - this.nowMs()),
    );
  }

  private cancelPendingListenStart(): void {
    if (this.pendingListenStart) clearTimeout(this.pendingListenStart);
    this.pendingListenStart = undefined;
  }

  private resetDecoder(): void {
    this.speaker.reset();
    this.echoTimestamps.length = 0;
  }

  /** Server-side echo cancellation: the next uplink frame carries the oldest timestamp of played audio, unless more than 3 are waiting. */
  private nextUplinkTimestamp(): number {
    if (this.options.aec !== 'server') return 0;
    this.echoTimestamps.push(...this.speaker.takePlayedTimestamps());
    if (this.echoTimestamps.length === 0) return 0;
    const timestamp = this.echoTimestamps.length <= MAX_ECHO_TIMESTAMPS ? this.echoTimestamps[0] : 0;
    this.echoTimestamps.shift();
    return timestamp;
  }

  private defaultListeningMode(): ListeningMode {
    return (this.options.aec ?? 'off') === 'off' ? 'auto' : 'realtime';
  }

  private frameVersion(): XiaozhiProtocolVersion {
    return this.version === 2 || this.version === 3 ? this.version : 1;
  }

  /** WebsocketProtocol::SendText: a frame the network component refuses is a server error, and the device goes idle. */
  private sendText(text: string): boolean {
    if (this.socket?.readyState !== WebSocket.OPEN) return false;
    if (Buffer.byteLength(text) > MAX_SENT_FRAME_BYTES) {
      this.setState('idle');
      return false;
    }
    this.sent.push(text);
    this.socket.send(text);
    return true;
  }

  private sendBinary(frame: Buffer): boolean {
    if (this.socket?.readyState !== WebSocket.OPEN || frame.length > MAX_SENT_FRAME_BYTES) return false;
    this.socket.send(frame);
    return true;
  }

  private requireChannel(): void {
    if (!this.connected) throw new Error('The audio channel is not open: connect() first');
  }

  private crashOn(what: string): void {
    this.crash = `The firmware would crash on ${what}`;
    this.helloWait?.reject(new XiaozhiConnectionError('crashed', this.crash));
    this.disconnect();
  }

  /** Self.reboot: the firmware answers, then reboots a second later, dropping the connection. */
  private rebootSoon(): void {
    void this.sleep(REBOOT_DELAY_MS).then(() => {
      if (!this.closed) this.disconnect();
    });
  }

  private onSocketClosed(socket: WebSocket, code: number, reason: string): void {
    if (socket !== this.socket) return;
    this.closeEvent = { code, reason, atMs: this.nowMs() };
    this.channelOpen = false;
    this.helloWait?.reject(new XiaozhiConnectionError('closed', `The connection closed (${code}) before the server hello`));
    this.setState('idle');
  }

  private dropSocket(): void {
    const socket = this.socket;
    if (!socket || socket.readyState === WebSocket.CLOSED) return;
    socket.terminate();
  }

  private sleep(ms: number): Promise<void> {
    if (this.closed) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(
        () => {
          this.sleeps.delete(timer);
          resolve();
        },
        Math.max(0, ms),
      );
      this.sleeps.set(timer, resolve);
    });
  }
}

function toBuffer(data: RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.from(data);
}

/** A random unicast, locally administered MAC, lowercase as SystemInfo::GetMacAddress prints it. */
function randomMac(): string {
  const bytes = randomBytes(6);
  bytes[0] = (bytes[0] & 0xfc) | 0x02;
  return [...bytes].map((byte) => byte.toString(16).padStart(2, '0')).join(':');
}
