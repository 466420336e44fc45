import { createLibopusDecoder, LibopusDecoder, releaseLibopus } from './libopus';
import { checkOpusSampleRate, OPUS_MAX_PACKET_BYTES, OpusSampleRate } from './opus-format';
import { OpusPacketError } from './opus-packet.error';

/**
 * Turns a device's Opus packets into mono Int16 PCM. A packet that cannot be decoded throws
 * {@link OpusPacketError} and leaves the decoder usable, so one bad packet costs the caller a
 * count and a dropped frame, not the session. Packets over `maxPacketBytes` are refused before
 * libopus sees them. The libopus state is made on the first packet (a session that never gets
 * audio never pays for it) and released by {@link free}.
 */
export class OpusDecoder {
  private decoder?: LibopusDecoder;
  private freed = false;

  constructor(
    readonly sampleRate: OpusSampleRate,
    readonly maxPacketBytes = OPUS_MAX_PACKET_BYTES,
  ) {
    checkOpusSampleRate(sampleRate);
  }

  decode(packet: Uint8Array): Int16Array {
    if (this.freed) throw new Error('OpusDecoder used after free()');
    if (packet.length === 0) throw new OpusPacketError('empty', 'no bytes');
    if (packet.length > this.maxPacketBytes) throw new OpusPacketError('too-large', `${packet.length} bytes, over ${this.maxPacketBytes}`);
    this.decoder ??= createLibopusDecoder(this.sampleRate);
    let bytes: Uint8Array;
    try {
      bytes = this.decoder.decode(packet);
    } catch (error) {
      throw new OpusPacketError('invalid', (error as Error).message);
    }
    return bytes.byteOffset % 2 === 0 ? new Int16Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 2) : new Int16Array(bytes.slice().buffer);
  }

  free(): void {
    if (this.decoder) releaseLibopus(this.decoder);
    this.decoder = undefined;
    this.freed = true;
  }
}
