import { Logger } from '@nestjs/common';
import { randomBytes } from 'crypto';
import { createSocket, RemoteInfo, Socket } from 'dgram';
import { opusPacketProblem } from '../../assistant/audio/opus-packet-shape';
import { ThrottledWarning } from '../../core/logging/throttled-warning';
import { aesCtr, readHeader, sealPacket, sessionNonce, UDP_HEADER_BYTES } from './udp-packet';

/** What the UDP socket counts (the metrics' `gateway_voice_events_total{event}`). */
export type UdpEvent =
  'udp_malformed' | 'udp_unknown_session' | 'udp_foreign_address' | 'udp_replayed' | 'udp_out_of_window' | 'udp_not_opus' | 'udp_gap' | 'udp_not_sent';

/** What each dropped datagram was, for the log. */
const DROPS: Record<Exclude<UdpEvent, 'udp_gap'>, string> = {
  udp_malformed: 'dropped a datagram too short, of another type, or with a length its size belies',
  udp_unknown_session: 'dropped a datagram of no open session',
  udp_foreign_address: "dropped a datagram from another address than its session's",
  udp_replayed: 'dropped a replayed or late datagram (its sequence is not above the last one heard)',
  udp_out_of_window: "dropped a datagram too far ahead of its session's sequence",
  udp_not_opus: 'dropped a datagram that is not Opus once decrypted (forged, or sealed with another key)',
  udp_not_sent: 'could not send a packet: the device has sent no audio on its channel yet, so its address is unknown',
};

/**
 * How far ahead of the last packet heard a sequence number may jump: packets lost on the way
 * (about a minute of 60 ms packets). The firmware numbers its packets one by one from its hello,
 * so a jump further is no device's: a packet that would move the session's sequence there (and
 * make every honest packet after it look replayed) is dropped instead.
 */
export const UDP_SEQUENCE_WINDOW = 1024;

/** What the server hello gives a device for its audio channel. */
export interface UdpHelloBlock {
  server: string;
  port: number;
  /** AES-128 key, 32 hex digits. */
  key: string;
  /** The session's nonce (its header template, with its ssrc), 32 hex digits. */
  nonce: string;
}

/**
 * One device's audio channel: its key, its nonce (the ssrc it is found by), the address its first
 * packet came from (the only one heard after, and where its audio is sent), and the sequence
 * numbers each way. Packets whose sequence is not above the last one accepted are dropped
 * (replays, late ones), gaps are counted, as the firmware does on its side.
 */
export class UdpAudioSession {
  readonly key = randomBytes(16);
  readonly nonce: Buffer;
  private remote?: { address: string; port: number };
  private lastReceived = 0;
  private sent = 0;
  private readonly startedAt = performance.now();
  closed = false;

  constructor(
    private readonly server: UdpAudioServer,
    readonly ssrc: number,
    /** A decrypted Opus packet from the device. */
    readonly onAudio: (packet: Buffer) => void,
  ) {
    this.nonce = sessionNonce(ssrc);
  }

  /** The server hello's `udp` block: `host` and `port` (the bound port unless given) are where devices reach this socket. */
  hello(host: string, port = this.server.port): UdpHelloBlock {
    return { server: host, port, key: this.key.toString('hex'), nonce: this.nonce.toString('hex') };
  }

  /** Sends one Opus packet to the device; false until its first packet told where it is (the firmware sends nothing else over UDP). */
  send(packet: Uint8Array): boolean {
    if (this.closed || !this.remote) {
      this.server.count('udp_not_sent');
      return false;
    }
    this.sent += 1;
    const datagram = sealPacket(this.key, this.nonce, packet, Math.round(performance.now() - this.startedAt), this.sent);
    this.server.sendTo(datagram, this.remote.port, this.remote.address);
    return true;
  }

  /**
   * A datagram of this session's ssrc: checked, decrypted, checked again, heard. Nothing moves the
   * session's sequence or settles its address but a packet that decrypts to well-formed Opus
   * (AES-CTR has no tag: that shape is the only sign the sender had the key).
   */
  receive(datagram: Buffer, sequence: number, from: RemoteInfo): void {
    if (this.remote && (this.remote.address !== from.address || this.remote.port !== from.port)) return this.server.count('udp_foreign_address');
    if (sequence <= this.lastReceived) return this.server.count('udp_replayed');
    if (sequence - this.lastReceived > UDP_SEQUENCE_WINDOW) return this.server.count('udp_out_of_window');
    const packet = aesCtr(this.key, datagram.subarray(0, UDP_HEADER_BYTES), datagram.subarray(UDP_HEADER_BYTES));
    if (opusPacketProblem(packet) !== undefined) return this.server.count('udp_not_opus');
    if (sequence !== this.lastReceived + 1 && this.lastReceived !== 0) this.server.count('udp_gap');
    this.lastReceived = sequence;
    this.remote ??= { address: from.address, port: from.port };
    this.onAudio(packet);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.server.forget(this);
  }
}

/**
 * The instance's one UDP socket for xiaozhi audio over MQTT. Each datagram is checked at a fixed,
 * small cost before anything is decrypted: its size and header, then its session (a map lookup
 * by ssrc), the address, the sequence. Whatever fails is dropped and counted, and logged at most
 * once per 10 s for each reason (a flood writes one line, not one per datagram); nothing is kept
 * for it.
 */
export class UdpAudioServer {
  private readonly logger = new Logger('Xiaozhi');
  private readonly warnings = new Map<UdpEvent, ThrottledWarning>();
  private readonly sessions = new Map<number, UdpAudioSession>();
  private socket?: Socket;

  constructor(private readonly counter: (event: UdpEvent) => void) {}

  /** The bound port, once listening. */
  get port(): number {
    return this.socket?.address().port ?? 0;
  }

  get sessionCount(): number {
    return this.sessions.size;
  }

  async listen(port: number, host: string): Promise<void> {
    const socket = createSocket({ type: host.includes(':') ? 'udp6' : 'udp4' });
    socket.on('message', (datagram, from) => this.onDatagram(datagram, from));
    socket.on('error', (error) => this.logger.warn(`UDP audio socket: ${error.message}`));
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(port, host, () => {
        socket.off('error', reject);
        resolve();
      });
    });
    this.socket = socket;
  }

  /** A new audio channel, with a fresh key and an ssrc no open session has. */
  open(onAudio: (packet: Buffer) => void): UdpAudioSession {
    let ssrc: number;
    do ssrc = randomBytes(4).readUInt32BE(0);
    while (ssrc === 0 || this.sessions.has(ssrc));
    const session = new UdpAudioSession(this, ssrc, onAudio);
    this.sessions.set(ssrc, session);
    return session;
  }

  forget(session: UdpAudioSession): void {
    if (this.sessions.get(session.ssrc) === session) this.sessions.delete(session.ssrc);
  }

  count(event: UdpEvent): void {
    this.counter(event);
    if (event === 'udp_gap') return;
    let warning = this.warnings.get(event);
    if (!warning) this.warnings.set(event, (warning = new ThrottledWarning(this.logger)));
    warning.warn(`UDP audio: ${DROPS[event]} (${event}; logged once per 10 s, every one counted)`);
  }

  sendTo(datagram: Buffer, port: number, address: string): void {
    this.socket?.send(datagram, port, address, (error) => error && this.logger.debug?.(`UDP audio to ${address}:${port}: ${error.message}`));
  }

  async close(): Promise<void> {
    for (const session of [...this.sessions.values()]) session.close();
    const socket = this.socket;
    this.socket = undefined;
    if (socket) await new Promise<void>((resolve) => socket.close(() => resolve()));
  }

  private onDatagram(datagram: Buffer, from: RemoteInfo): void {
    const header = readHeader(datagram);
    if (typeof header === 'string') return this.count('udp_malformed');
    const session = this.sessions.get(header.ssrc);
    if (!session) return this.count('udp_unknown_session');
    session.receive(datagram, header.sequence, from);
  }
}
