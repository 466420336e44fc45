/**
 * The binary WebSocket frames of the xiaozhi protocol, laid out as the firmware's packed structs
 * (main/protocols/protocol.h) with every field big-endian, as websocket_protocol.cc writes and
 * reads them:
 * - version 1: the frame is one raw Opus packet;
 * - version 2: `u16 version, u16 type, u32 reserved, u32 timestamp, u32 payload_size`, payload;
 * - version 3: `u8 type, u8 reserved, u16 payload_size`, payload.
 * The firmware writes type 0 (Opus) and reserved 0; reading, it takes the payload size from the
 * header and ignores the version, type and reserved fields and any bytes after the payload.
 */

export type XiaozhiProtocolVersion = 1 | 2 | 3;

export const FRAME_TYPE_OPUS = 0;
/** Named by the firmware's struct comment; it never writes it, and reading treats such a frame as audio. */
export const FRAME_TYPE_JSON = 1;

export const PROTOCOL2_HEADER_BYTES = 16;
export const PROTOCOL3_HEADER_BYTES = 4;

export interface BinaryFrame {
  /** What the header says (version 1 has none: 0). */
  type: number;
  /** Version 2: milliseconds, filled by a device built for server-side echo cancellation; else 0. */
  timestamp: number;
  payload: Uint8Array;
}

export interface FrameFields {
  type?: number;
  timestamp?: number;
  /** Version 2: what the `version` field says, when a test wants it to lie; the protocol version by default. */
  headerVersion?: number;
}

/** A frame the firmware cannot read safely: it would read past the end of the buffer. */
export class FramingError extends Error {}

/**
 * `payload` framed as a device of protocol `version` sends it (fields a test sets aside). Version
 * 3 writes the low 16 bits of the size, as the firmware's `htons` of a `size_t` does.
 */
export function encodeFrame(version: XiaozhiProtocolVersion, payload: Uint8Array, fields: FrameFields = {}): Buffer {
  const { type = FRAME_TYPE_OPUS, timestamp = 0, headerVersion = version } = fields;
  if (version === 1) return Buffer.from(payload);
  if (version === 2) {
    const frame = Buffer.alloc(PROTOCOL2_HEADER_BYTES + payload.length);
    frame.writeUInt16BE(headerVersion & 0xffff, 0);
    frame.writeUInt16BE(type & 0xffff, 2);
    frame.writeUInt32BE(0, 4);
    frame.writeUInt32BE(timestamp >>> 0, 8);
    frame.writeUInt32BE(payload.length >>> 0, 12);
    frame.set(payload, PROTOCOL2_HEADER_BYTES);
    return frame;
  }
  const frame = Buffer.alloc(PROTOCOL3_HEADER_BYTES + payload.length);
  frame.writeUInt8(type & 0xff, 0);
  frame.writeUInt8(0, 1);
  frame.writeUInt16BE(payload.length & 0xffff, 2);
  frame.set(payload, PROTOCOL3_HEADER_BYTES);
  return frame;
}

/**
 * A received frame as the firmware reads it: the payload is `payload_size` bytes after the
 * header. Throws {@link FramingError} where the firmware, which checks no length, would read
 * past the frame.
 */
export function decodeFrame(version: XiaozhiProtocolVersion, frame: Uint8Array): BinaryFrame {
  const bytes = Buffer.from(frame.buffer, frame.byteOffset, frame.byteLength);
  if (version === 1) return { type: FRAME_TYPE_OPUS, timestamp: 0, payload: bytes };
  const headerBytes = version === 2 ? PROTOCOL2_HEADER_BYTES : PROTOCOL3_HEADER_BYTES;
  if (bytes.length < headerBytes) throw new FramingError(`A version ${version} frame of ${bytes.length} bytes is shorter than its ${headerBytes}-byte header`);
  const type = version === 2 ? bytes.readUInt16BE(2) : bytes.readUInt8(0);
  const timestamp = version === 2 ? bytes.readUInt32BE(8) : 0;
  const payloadSize = version === 2 ? bytes.readUInt32BE(12) : bytes.readUInt16BE(2);
  if (headerBytes + payloadSize > bytes.length)
    throw new FramingError(`A version ${version} frame says its payload has ${payloadSize} bytes; it carries ${bytes.length - headerBytes}`);
  return { type, timestamp, payload: bytes.subarray(headerBytes, headerBytes + payloadSize) };
}
