/** Largest frame RFC 6716 allows (3.2.1). */
const MAX_FRAME_BYTES = 1275;
/** Longest audio one packet may carry (3.2.5). */
const MAX_PACKET_DURATION_US = 120_000;
/** Frame duration of each TOC configuration, in microseconds (3.1, table 2). */
const FRAME_DURATION_US = [
  ...Array.from({ length: 12 }, (_, config) => [10_000, 20_000, 40_000, 60_000][config % 4]),
  ...Array.from({ length: 4 }, (_, config) => [10_000, 20_000][config % 2]),
  ...Array.from({ length: 16 }, (_, config) => [2_500, 5_000, 10_000, 20_000][config % 4]),
];

/** A frame length's 1- or 2-byte code at `offset` (3.2.1): the length and the bytes the code took, or undefined past the end. */
function frameLength(packet: Uint8Array, offset: number): { length: number; size: number } | undefined {
  if (offset >= packet.length) return undefined;
  const first = packet[offset];
  if (first < 252) return { length: first, size: 1 };
  if (offset + 1 >= packet.length) return undefined;
  return { length: packet[offset + 1] * 4 + first, size: 2 };
}

/**
 * Why `packet` is not a well-formed Opus packet by RFC 6716's rules R1-R7 (3.4), or undefined: the
 * TOC byte's frame-count code against the packet's length, the frame lengths, the padding and
 * the total duration. A few byte reads, no decoder: what decides, before anything is kept or
 * counted as heard, that a decrypted UDP payload is audio. (Opus has no checksum, so a random
 * payload can still pass; what it cannot do is pass as audio while breaking these rules.)
 */
export function opusPacketProblem(packet: Uint8Array): string | undefined {
  if (packet.length < 1) return 'empty';
  const toc = packet[0];
  const code = toc & 0x03;
  const payload = packet.length - 1;
  if (code === 0) return payload > MAX_FRAME_BYTES ? 'frame over 1275 bytes' : undefined;
  if (code === 1) return payload % 2 !== 0 ? 'two equal frames of an odd total' : payload / 2 > MAX_FRAME_BYTES ? 'frame over 1275 bytes' : undefined;
  if (code === 2) {
    const first = frameLength(packet, 1);
    if (!first) return 'frame length past the end';
    const second = payload - first.size - first.length;
    return second < 0 ? 'first frame past the end' : first.length > MAX_FRAME_BYTES || second > MAX_FRAME_BYTES ? 'frame over 1275 bytes' : undefined;
  }
  if (packet.length < 2) return 'no frame count';
  const countByte = packet[1];
  const frames = countByte & 0x3f;
  if (frames === 0) return 'zero frames';
  if (frames * FRAME_DURATION_US[toc >> 3] > MAX_PACKET_DURATION_US) return 'over 120 ms';
  let offset = 2;
  let padding = 0;
  if (countByte & 0x40) {
    for (;;) {
      if (offset >= packet.length) return 'padding length past the end';
      const byte = packet[offset++];
      padding += byte === 255 ? 254 : byte;
      if (byte !== 255) break;
    }
  }
  let left = packet.length - offset - padding;
  if (left < 0) return 'padding past the end';
  if (!(countByte & 0x80))
    return left % frames !== 0 ? 'equal frames that do not divide the packet' : left / frames > MAX_FRAME_BYTES ? 'frame over 1275 bytes' : undefined;
  for (let index = 0; index < frames - 1; index++) {
    const frame = frameLength(packet, offset);
    if (!frame) return 'frame length past the end';
    offset += frame.size;
    left -= frame.size + frame.length;
    if (frame.length > MAX_FRAME_BYTES || left < 0) return left < 0 ? 'frame past the end' : 'frame over 1275 bytes';
  }
  return left > MAX_FRAME_BYTES ? 'frame over 1275 bytes' : undefined;
}
