import { connect, Socket } from 'net';

/** MQTT 3.1.1 remaining length (2.2.3). */
function remainingLength(length: number): Buffer {
  const bytes: number[] = [];
  do {
    let byte = length % 128;
    length = Math.floor(length / 128);
    if (length > 0) byte |= 0x80;
    bytes.push(byte);
  } while (length > 0);
  return Buffer.from(bytes);
}

const utf8String = (text: string): Buffer => {
  const bytes = Buffer.from(text, 'utf8');
  const length = Buffer.alloc(2);
  length.writeUInt16BE(bytes.length);
  return Buffer.concat([length, bytes]);
};

/** A CONNECT packet (3.1) of protocol level 4, clean session. */
export function connectPacket(fields: { clientId: string; username?: string; password?: string; keepaliveS: number }): Buffer {
  const flags = 0x02 | (fields.username !== undefined ? 0x80 : 0) | (fields.password !== undefined ? 0x40 : 0);
  const keepalive = Buffer.alloc(2);
  keepalive.writeUInt16BE(fields.keepaliveS);
  const body = Buffer.concat([
    utf8String('MQTT'),
    Buffer.from([4, flags]),
    keepalive,
    utf8String(fields.clientId),
    ...(fields.username !== undefined ? [utf8String(fields.username)] : []),
    ...(fields.password !== undefined ? [utf8String(fields.password)] : []),
  ]);
  return Buffer.concat([Buffer.from([0x10]), remainingLength(body.length), body]);
}

/** A QoS 0 PUBLISH packet (3.3). */
export function publishPacket(topic: string, payload: Buffer | string): Buffer {
  const body = Buffer.concat([utf8String(topic), Buffer.from(payload)]);
  return Buffer.concat([Buffer.from([0x30]), remainingLength(body.length), body]);
}

/** Only the fixed header of a PUBLISH claiming `length` bytes: what a client sends first of a huge packet. */
export function publishHeader(length: number): Buffer {
  return Buffer.concat([Buffer.from([0x30]), remainingLength(length)]);
}

export const PINGREQ = Buffer.from([0xc0, 0x00]);

/**
 * A TCP connection to an MQTT server that writes exactly the bytes a test gives it (no client
 * library keeps it alive or fixes its packets), from `localAddress` if given (any of 127.0.0.0/8
 * on loopback): for the keep-alive, size and flood tests.
 */
export class RawMqttConnection {
  readonly received: Buffer[] = [];
  closedAt?: number;
  readonly closed: Promise<void>;

  private constructor(readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => this.received.push(chunk));
    socket.on('error', () => undefined);
    this.closed = new Promise((resolve) =>
      socket.once('close', () => {
        this.closedAt = Date.now();
        resolve();
      }),
    );
  }

  static open(port: number, options: { localAddress?: string } = {}): Promise<RawMqttConnection> {
    return new Promise((resolve, reject) => {
      const socket = connect({ host: '127.0.0.1', port, localAddress: options.localAddress });
      socket.once('connect', () => {
        socket.off('error', reject);
        resolve(new RawMqttConnection(socket));
      });
      socket.once('error', reject);
    });
  }

  get isClosed(): boolean {
    return this.closedAt !== undefined;
  }

  write(bytes: Buffer): Promise<void> {
    return new Promise((resolve) => {
      if (this.socket.destroyed) return resolve();
      this.socket.write(bytes, () => resolve());
    });
  }

  /** The CONNACK's return code (3.2.2.3), once it came; undefined if the connection closed first. */
  async connack(timeoutMs = 3000): Promise<number | undefined> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const bytes = Buffer.concat(this.received);
      if (bytes.length >= 4 && bytes[0] === 0x20) return bytes[3];
      if (this.isClosed) return undefined;
      if (Date.now() > deadline) throw new Error('No CONNACK');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  destroy(): void {
    this.socket.destroy();
  }
}
