import type { Socket } from 'net';

/**
 * Bounds the MQTT packets a client may send before the broker buffers them whole: reads each
 * packet's fixed header (its type byte and remaining-length varint) off the stream as it comes,
 * skips its body by count, and destroys the connection at the header of one longer than
 * `maxBytes`. A few bytes of state per connection, whatever it sends.
 */
export class MqttPacketSizeLimit {
  /** Bytes of the current packet's body still to skip. */
  private remaining = 0;
  /** Reading a fixed header: -1 before its type byte, then the varint's bytes so far. */
  private headerByte = -1;
  private length = 0;
  private multiplier = 1;
  private inHeader = true;

  constructor(
    private readonly connection: Socket,
    private readonly maxBytes: number,
    private readonly onOversized: () => void,
  ) {
    connection.on('data', (chunk: Buffer) => this.read(chunk));
  }

  private read(chunk: Buffer): void {
    let offset = 0;
    while (offset < chunk.length) {
      if (!this.inHeader) {
        const skipped = Math.min(this.remaining, chunk.length - offset);
        this.remaining -= skipped;
        offset += skipped;
        if (this.remaining === 0) this.startHeader();
        continue;
      }
      const byte = chunk[offset++];
      if (this.headerByte === -1) {
        this.headerByte = 0;
        continue;
      }
      this.length += (byte & 0x7f) * this.multiplier;
      this.multiplier *= 128;
      this.headerByte += 1;
      if (byte & 0x80 && this.headerByte < 4) continue;
      if (this.length > this.maxBytes || byte & 0x80) {
        this.onOversized();
        this.connection.destroy();
        return;
      }
      this.remaining = this.length;
      this.inHeader = false;
      if (this.remaining === 0) this.startHeader();
    }
  }

  private startHeader(): void {
    this.inHeader = true;
    this.headerByte = -1;
    this.length = 0;
    this.multiplier = 1;
  }
}
