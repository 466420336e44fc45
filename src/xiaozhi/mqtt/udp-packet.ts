import { createCipheriv } from 'crypto';

/** `|type 0x01|flags|payload_len u16|ssrc u32|timestamp u32|sequence u32|`, big-endian (`main/protocols/mqtt_protocol.cc`). */
export const UDP_HEADER_BYTES = 16;
/** The only packet type: encrypted Opus. */
export const UDP_AUDIO_TYPE = 0x01;

/** One datagram's header, read. */
export interface UdpHeader {
  payloadLength: number;
  ssrc: number;
  timestamp: number;
  sequence: number;
}

/**
 * A session's nonce: type 0x01, flags 0, its ssrc at bytes 4-7; the sender writes the payload
 * length, timestamp and sequence of each packet over it, and the result is both the packet's
 * header and its AES-CTR counter block.
 */
export function sessionNonce(ssrc: number): Buffer {
  const nonce = Buffer.alloc(UDP_HEADER_BYTES);
  nonce.writeUInt8(UDP_AUDIO_TYPE, 0);
  nonce.writeUInt32BE(ssrc >>> 0, 4);
  return nonce;
}

/** AES-128-CTR of `data` from the counter block `iv` (encrypts and decrypts alike). */
export function aesCtr(key: Buffer, iv: Uint8Array, data: Uint8Array): Buffer {
  const cipher = createCipheriv('aes-128-ctr', key, iv);
  return Buffer.concat([cipher.update(data), cipher.final()]);
}

/** One Opus packet as a datagram, as `MqttProtocol::SendAudio` writes it. */
export function sealPacket(key: Buffer, nonce: Buffer, payload: Uint8Array, timestamp: number, sequence: number): Buffer {
  const header = Buffer.from(nonce);
  header.writeUInt16BE(payload.length, 2);
  header.writeUInt32BE(timestamp >>> 0, 8);
  header.writeUInt32BE(sequence >>> 0, 12);
  return Buffer.concat([header, aesCtr(key, header, payload)]);
}

/** The header of `datagram`, or why it is no audio packet: too short, another type, or a length its size belies. */
export function readHeader(datagram: Buffer): UdpHeader | string {
  if (datagram.length < UDP_HEADER_BYTES) return 'short';
  if (datagram[0] !== UDP_AUDIO_TYPE) return 'type';
  const payloadLength = datagram.readUInt16BE(2);
  if (payloadLength !== datagram.length - UDP_HEADER_BYTES) return 'length';
  return { payloadLength, ssrc: datagram.readUInt32BE(4), timestamp: datagram.readUInt32BE(8), sequence: datagram.readUInt32BE(12) };
}
