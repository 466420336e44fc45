import type { Client } from 'aedes';
import { EventEmitter } from 'events';
import { ConnectionSocket, SOCKET_CLOSED, SOCKET_CLOSING, SOCKET_OPEN } from '../../core/ws/connection-socket';
import type { AudioTransport } from '../audio-transport';
import { downlinkTopic } from './mqtt-credentials';
import type { UdpAudioServer, UdpAudioSession } from './udp-audio';

/** aedes calls a publish's callback whatever happens (a write error closes the client by itself). */
const noop = (): void => undefined;

/**
 * How far UDP audio and MQTT messages may overtake each other (see {@link AudioTransport.audioSkewMs}):
 * one frame of the firmware's default 60 ms. A publish goes through TCP and the device's MQTT
 * task, then its main loop; a datagram straight to its UDP callback. On loopback, with no wait,
 * an answer's first packet came before its `tts start` in about a third of answers.
 */
const AUDIO_SKEW_MS = 60;

/** WebSocket's "normal closure": a goodbye, the device's or the gateway's, that leaves the MQTT connection up for the next hello. */
const CLOSE_NORMAL = 1000;
/** WebSocket's "abnormal closure": the MQTT connection dropped. */
const CLOSE_ABNORMAL = 1006;

/**
 * One audio channel of a xiaozhi device over MQTT + UDP, from its hello to a goodbye, as a
 * {@link ConnectionSocket}: the gateway's xiaozhi session works with it as with a WebSocket. Text
 * sent is one MQTT PUBLISH delivered to the device's own connection (it never subscribes); binary
 * sent is one Opus packet in an encrypted UDP datagram. What the device publishes arrives as text
 * messages, its decrypted UDP packets as binary ones (framing version 1: raw Opus).
 *
 * A close sends `goodbye` (unless the device said it first) and frees the UDP session; the MQTT
 * connection stays up for the device's next hello after a normal close (1000), and is ended after
 * any other (a shutdown, a refusal, a client that stopped reading), so the device reconnects.
 */
export class MqttDeviceSocket extends EventEmitter implements ConnectionSocket, AudioTransport {
  readyState = SOCKET_OPEN;
  readonly protocol = '';
  readonly helloTransport = 'udp';
  readonly audioSkewMs = AUDIO_SKEW_MS;
  private paused = false;
  private udp?: UdpAudioSession;
  private sessionId = '';
  private peerSaidGoodbye = false;

  constructor(
    private readonly client: Client,
    readonly deviceId: string,
    private readonly audio: UdpAudioServer,
    /** The address the server hello gives for UDP: this instance's, as devices reach it. */
    private readonly udpPublic: { host: string; port?: number },
  ) {
    super();
  }

  get bufferedAmount(): number {
    return this.client.conn?.writableLength ?? 0;
  }

  /** MQTT has its own flow control (TCP under the broker): pausing only marks the socket. */
  get isPaused(): boolean {
    return this.paused;
  }

  pause(): void {
    this.paused = true;
  }

  resume(): void {
    this.paused = false;
  }

  /** Keep-alive is MQTT's (the broker's PINGREQ deadline): no ping of the gateway's. */
  ping(): void {}

  openAudioChannel(sessionId: string): Record<string, unknown> {
    this.sessionId = sessionId;
    this.udp?.close();
    this.udp = this.audio.open((packet) => {
      if (this.readyState === SOCKET_OPEN) this.emit('message', packet, true);
    });
    return { transport: 'udp', udp: this.udp.hello(this.udpPublic.host, this.udpPublic.port) };
  }

  send(data: string | Uint8Array, options?: { binary?: boolean }): void {
    if (this.readyState !== SOCKET_OPEN) return;
    if (options?.binary) this.udp?.send(data as Uint8Array);
    else this.publish(typeof data === 'string' ? data : Buffer.from(data).toString('utf8'));
  }

  /** A message the device published; `type` is its `type`, read by the server. */
  receive(payload: Buffer, type: unknown): void {
    if (this.readyState !== SOCKET_OPEN) return;
    if (type === 'goodbye') this.peerSaidGoodbye = true;
    this.emit('message', payload, false);
  }

  close(code = CLOSE_NORMAL, reason = ''): void {
    if (this.readyState === SOCKET_CLOSED || this.readyState === SOCKET_CLOSING) return;
    if (!this.peerSaidGoodbye) this.publish(JSON.stringify({ type: 'goodbye', session_id: this.sessionId }));
    this.end(code, reason, code !== CLOSE_NORMAL);
  }

  terminate(): void {
    this.end(CLOSE_ABNORMAL, '', true);
  }

  /** The device's MQTT connection ended (or was replaced by a newer one). */
  dropped(): void {
    this.end(CLOSE_ABNORMAL, 'MQTT connection closed', false);
  }

  private end(code: number, reason: string, endMqtt: boolean): void {
    if (this.readyState === SOCKET_CLOSED) return;
    this.readyState = SOCKET_CLOSED;
    this.udp?.close();
    this.udp = undefined;
    // After what was published last (a goodbye) is written: the broker writes on the next turn.
    if (endMqtt) setImmediate(() => this.client.closed || this.client.close());
    this.emit('close', code, Buffer.from(reason));
  }

  private publish(text: string): void {
    if (this.client.closed) return;
    this.client.publish({ cmd: 'publish', topic: downlinkTopic(this.deviceId), payload: Buffer.from(text), qos: 0, retain: false, dup: false }, noop);
  }
}
