/** The binary framings a device picks with `Protocol-Version` (`main/protocols/websocket_protocol.cc`). */
export type FramingVersion = 1 | 2 | 3;

export const FRAMING_VERSIONS: readonly FramingVersion[] = [1, 2, 3];

/** Version 2's header: `u16 version, u16 type, u32 reserved, u32 timestamp_ms, u32 payload_size`, big-endian. */
const V2_HEADER = 16;
/** Version 3's header: `u8 type, u8 reserved, u16 payload_size`, big-endian. */
const V3_HEADER = 4;
/** The payload type of versions 2 and 3 that carries Opus (1 is JSON, which the firmware never sends this way). */
const OPUS_TYPE = 0;

/** A binary message, read: the Opus packet it carries, or why it carries none. */
export type Unframed = { packet: Uint8Array } | { problem: string };

/**
 * The Opus packet in one binary message of `version`. Version 1 is the packet itself; versions
 * 2 and 3 must hold exactly the payload their header announces, of the Opus type.
 */
export function unframe(version: FramingVersion, data: Buffer): Unframed {
  if (version === 1) return { packet: data };
  const header = version === 2 ? V2_HEADER : V3_HEADER;
  if (data.length < header) return { problem: `a version ${version} audio frame has a ${header}-byte header; this one has ${data.length} bytes` };
  const type = version === 2 ? data.readUInt16BE(2) : data.readUInt8(0);
  const size = version === 2 ? data.readUInt32BE(12) : data.readUInt16BE(2);
  if (type !== OPUS_TYPE) return { problem: `audio frame of type ${type}: only type 0 (Opus) is audio` };
  if (size !== data.length - header) return { problem: `audio frame announces ${size} bytes of payload and carries ${data.length - header}` };
  return { packet: data.subarray(header) };
}

/** One Opus packet as a binary message of `version`; `timestampMs` fills version 2's timestamp (the firmware's echo cancellation reads it). */
export function frame(version: FramingVersion, packet: Uint8Array, timestampMs: number): Uint8Array {
  if (version === 1) return packet;
  if (version === 2) {
    const message = Buffer.allocUnsafe(V2_HEADER + packet.length);
    message.writeUInt16BE(2, 0);
    message.writeUInt16BE(OPUS_TYPE, 2);
    message.writeUInt32BE(0, 4);
    message.writeUInt32BE(timestampMs >>> 0, 8);
    message.writeUInt32BE(packet.length, 12);
    message.set(packet, V2_HEADER);
    return message;
  }
  const message = Buffer.allocUnsafe(V3_HEADER + packet.length);
  message.writeUInt8(OPUS_TYPE, 0);
  message.writeUInt8(0, 1);
  message.writeUInt16BE(packet.length, 2);
  message.set(packet, V3_HEADER);
  return message;
}
