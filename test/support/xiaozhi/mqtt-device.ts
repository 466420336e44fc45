import { randomUUID } from 'crypto';
import { createSocket, Socket } from 'dgram';
import { connectAsync, MqttClient } from 'mqtt';
import { performance } from 'perf_hooks';
import { OpusDecoder } from '../../../src/assistant/audio/opus-decoder';
import { speechAt16k, uplinkPackets } from '../speech-packets';
import { BoardIdentity } from './board-info';
import { isJsonObject } from './cjson';
import { DeviceMcpServer } from './device-mcp-server';
import { abortMessage, listenStartMessage, ListeningMode, listenStopMessage, mcpMessage } from './device-messages';
import { BoardState, boardTools, commonTools } from './device-tools';
import { MessageInbox, ReceivedMessage } from './message-inbox';
import { emptyConfiguration, requestOta, storeOtaAnswer, StoredConfiguration, OtaAnswer } from './ota-request';
import { aesCtr, sealUplink, UDP_HEADER_BYTES } from './udp-seal';

export { aesCtr, sealUplink } from './udp-seal';

const HEADER_BYTES = UDP_HEADER_BYTES;

export interface UdpChannel {
  server: string;
  port: number;
  key: Buffer;
  nonce: Buffer;
}

/**
 * A xiaozhi-esp32 device on MQTT + UDP (`main/protocols/mqtt_protocol.cc`), for tests: it asks for
 * its configuration, connects to the `mqtt` endpoint with the credentials it was given, publishes
 * its JSON to `publish_topic` and never subscribes; its hello (`transport: "udp"`) opens the UDP
 * channel the server hello describes, where it sends and receives AES-CTR encrypted Opus, dropping
 * received packets as the firmware does (short, other type, length mismatch, sequence not above
 * the last, or audio while it is not speaking: `Application`'s OnIncomingAudio). Everything received is kept for assertions; received audio is decoded at the server
 * hello's rate. Its MCP server (the WebSocket simulator's, with the same board tools) answers the
 * gateway's `type:"mcp"` messages over MQTT.
 */
export class MqttXiaozhiDevice {
  readonly identity: BoardIdentity;
  readonly configuration: StoredConfiguration = emptyConfiguration();
  readonly inbox = new MessageInbox();
  readonly board = new BoardState();
  readonly mcp: DeviceMcpServer;
  /** Decrypted Opus packets received over UDP, in order. */
  readonly audio: Uint8Array[] = [];
  /** When each of {@link audio} arrived, in ms of {@link nowMs}. */
  readonly audioAtMs: number[] = [];
  /** Datagrams the firmware's checks dropped. */
  droppedDatagrams = 0;
  /** Audio that came while the device was not speaking (before `tts start`, after `tts stop`), dropped as the firmware drops it. */
  audioWhileNotSpeaking = 0;
  /** Between a `tts start` and its `tts stop` (the firmware's speaking state). */
  speaking = false;
  mqtt?: MqttClient;
  channel?: UdpChannel;
  sessionId = '';
  private udp?: Socket;
  private localSequence = 0;
  private remoteSequence = 0;
  private serverSampleRate = 24_000;
  private readonly epoch = performance.now();
  /** See the constructor's `mainLoopDelayMs`. */
  private readonly mainLoopDelayMs: number;
  private readonly scheduled = new Set<NodeJS.Timeout>();

  /**
   * @param options.mainLoopDelayMs how long the firmware takes to apply `tts start` and `stop`:
   *   its MQTT task hands them to the main loop (`Application::Schedule`), while UDP audio is
   *   checked against the state at once. 0 applies them as they arrive.
   */
  constructor(options: { deviceId?: string; mainLoopDelayMs?: number } = {}) {
    this.mainLoopDelayMs = options.mainLoopDelayMs ?? 0;
    const mac = options.deviceId ?? randomMac();
    this.identity = { deviceId: mac, clientId: randomUUID(), board: 'bread-compact-wifi', firmwareVersion: '2.4.2', language: 'zh-CN' };
    this.mcp = new DeviceMcpServer(
      { serverName: this.identity.board, serverVersion: this.identity.firmwareVersion, tools: [...commonTools(this.board), ...boardTools(this.board)] },
      (payload) => void this.publish(mcpMessage(this.sessionId, payload)).catch(() => undefined),
    );
  }

  /** Milliseconds since the device was made. */
  nowMs(): number {
    return performance.now() - this.epoch;
  }

  /** Whether its MQTT connection is up. */
  get connected(): boolean {
    return this.mqtt?.connected === true;
  }

  get deviceId(): string {
    return this.identity.deviceId;
  }

  get messages(): ReceivedMessage[] {
    return this.inbox.received;
  }

  async requestConfiguration(otaUrl: string): Promise<OtaAnswer> {
    const answer = await requestOta(otaUrl, 'POST', this.identity);
    storeOtaAnswer(this.configuration, answer);
    return answer;
  }

  /** `MqttProtocol::StartMqttClient`: connects with the stored (or given) credentials; rejects when the server refuses. */
  async connect(
    overrides: { password?: string; clientId?: string; username?: string; endpoint?: string; tls?: { ca: string | Buffer; servername?: string } } = {},
  ): Promise<void> {
    const { client_id, username, password, keepalive } = this.configuration.mqtt;
    const endpoint = overrides.endpoint ?? String(this.configuration.mqtt.endpoint);
    const [host, port] = endpoint.split(':');
    this.mqtt?.removeAllListeners('message');
    this.mqtt = await connectAsync(`${overrides.tls ? 'mqtts' : 'mqtt'}://${host}:${port}`, {
      ...(overrides.tls ? { ca: overrides.tls.ca, servername: overrides.tls.servername, rejectUnauthorized: true } : {}),
      clientId: overrides.clientId ?? String(client_id),
      username: overrides.username ?? String(username),
      password: overrides.password ?? String(password),
      keepalive: Number(keepalive ?? 240),
      protocolVersion: 4,
      reconnectPeriod: 0,
      connectTimeout: 5000,
    });
    this.mqtt.on('message', (_topic, payload) => this.onMessage(payload.toString('utf8')));
  }

  /** Publishes `text` to the stored topic (or `topic`). */
  publish(text: string, topic?: string): Promise<unknown> {
    if (!this.mqtt) throw new Error('Not connected');
    return this.mqtt.publishAsync(topic ?? String(this.configuration.mqtt.publish_topic), text, { qos: 0 });
  }

  /** `MqttProtocol::OpenAudioChannel`: the hello, then the UDP channel of the server's. */
  async openAudioChannel(timeoutMs = 10_000): Promise<any> {
    this.sessionId = '';
    await this.publish(
      JSON.stringify({
        type: 'hello',
        version: 3,
        transport: 'udp',
        features: { mcp: true },
        audio_params: { format: 'opus', sample_rate: 16000, channels: 1, frame_duration: 60 },
      }),
    );
    const hello = await this.inbox.next('hello', (message) => message.transport === 'udp', timeoutMs);
    this.sessionId = hello.session_id;
    this.serverSampleRate = hello.audio_params?.sample_rate ?? 24_000;
    this.channel = { server: hello.udp.server, port: hello.udp.port, key: Buffer.from(hello.udp.key, 'hex'), nonce: Buffer.from(hello.udp.nonce, 'hex') };
    this.localSequence = 0;
    this.remoteSequence = 0;
    this.udp?.close();
    const udp = createSocket('udp4');
    udp.on('message', (datagram) => this.onDatagram(datagram));
    await new Promise<void>((resolve) => udp.connect(this.channel!.port, this.channel!.server, () => resolve()));
    this.udp = udp;
    return hello;
  }

  listen(mode: ListeningMode = 'auto'): Promise<unknown> {
    return this.publish(listenStartMessage(this.sessionId, mode));
  }

  stopListening(): Promise<unknown> {
    return this.publish(listenStopMessage(this.sessionId));
  }

  abort(): Promise<unknown> {
    return this.publish(abortMessage(this.sessionId));
  }

  /** `MqttProtocol::CloseAudioChannel(true)`: the UDP channel closes, and the server is told. */
  async goodbye(): Promise<void> {
    this.udp?.close();
    this.udp = undefined;
    await this.publish(`{"session_id":"${this.sessionId}","type":"goodbye"}`);
  }

  /** One Opus packet, sealed as the firmware seals it; returns the datagram sent. */
  sendPacket(packet: Uint8Array): Buffer {
    if (!this.udp || !this.channel) throw new Error('No audio channel');
    this.localSequence += 1;
    const datagram = sealUplink(this.channel.key, this.channel.nonce, packet, Math.round(performance.now() - this.epoch), this.localSequence);
    this.udp.send(datagram);
    return datagram;
  }

  /** A datagram as it is (a replay, a forgery). */
  sendRaw(datagram: Uint8Array): void {
    this.udp!.send(datagram);
  }

  /** Microphone packets, one per 60 ms when paced. */
  async sendAudio(packets: readonly Uint8Array[], paced = true): Promise<void> {
    for (const packet of packets) {
      this.sendPacket(packet);
      if (paced) await new Promise((resolve) => setTimeout(resolve, 60));
    }
  }

  async say(text: string, options: { beforeMs?: number; afterMs?: number } = {}): Promise<void> {
    const { packets } = uplinkPackets(await speechAt16k(text), options.beforeMs ?? 300, options.afterMs ?? 900);
    await this.sendAudio(packets);
  }

  next<T = any>(type: string, predicate?: (message: any) => boolean, timeoutMs = 5000): Promise<T> {
    return this.inbox.next<T>(type, predicate, timeoutMs);
  }

  /** The received audio decoded at the server hello's rate: samples in all. */
  decodedSamples(): number {
    const decoder = new OpusDecoder(this.serverSampleRate as 24000);
    try {
      return this.audio.reduce((total, packet) => total + decoder.decode(packet).length, 0);
    } finally {
      decoder.free();
    }
  }

  async close(): Promise<void> {
    for (const timer of this.scheduled) clearTimeout(timer);
    this.scheduled.clear();
    this.udp?.close();
    this.udp = undefined;
    this.mcp.stop();
    this.inbox.close('The device closed');
    await this.mqtt?.endAsync(true).catch(() => undefined);
  }

  private onMessage(text: string): void {
    let message: any;
    try {
      message = JSON.parse(text);
    } catch {
      return;
    }
    if (typeof message?.type !== 'string') return;
    if (message.type === 'goodbye' && message.session_id === this.sessionId) {
      this.udp?.close();
      this.udp = undefined;
      this.speaking = false;
    }
    if (message.type === 'tts' && (message.state === 'start' || message.state === 'stop')) this.schedule(() => (this.speaking = message.state === 'start'));
    if (message.type === 'mcp' && isJsonObject(message.payload)) this.mcp.handle(message.payload);
    this.inbox.add({ atMs: performance.now() - this.epoch, message });
  }

  /** `Application::Schedule`: runs `task` on the main loop, {@link mainLoopDelayMs} later. */
  private schedule(task: () => void): void {
    if (this.mainLoopDelayMs === 0) return task();
    const timer = setTimeout(() => {
      this.scheduled.delete(timer);
      task();
    }, this.mainLoopDelayMs);
    this.scheduled.add(timer);
  }

  /** The firmware's UDP OnMessage checks, then decryption. */
  private onDatagram(data: Buffer): void {
    if (data.length < HEADER_BYTES || data[0] !== 0x01 || data.readUInt16BE(2) !== data.length - HEADER_BYTES) {
      this.droppedDatagrams += 1;
      return;
    }
    const sequence = data.readUInt32BE(12);
    if (sequence <= this.remoteSequence) {
      this.droppedDatagrams += 1;
      return;
    }
    this.remoteSequence = sequence;
    if (!this.speaking) {
      this.audioWhileNotSpeaking += 1;
      return;
    }
    this.audioAtMs.push(this.nowMs());
    this.audio.push(aesCtr(this.channel!.key, data.subarray(0, HEADER_BYTES), data.subarray(HEADER_BYTES)));
  }
}

function randomMac(): string {
  const bytes = [0x02, ...Array.from({ length: 5 }, () => Math.floor(Math.random() * 256))];
  return bytes.map((byte) => byte.toString(16).padStart(2, '0')).join(':');
}
