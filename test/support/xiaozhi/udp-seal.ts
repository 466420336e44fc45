import { createCipheriv } from 'crypto';

/** The datagram header the firmware writes before each Opus packet. */
export const UDP_HEADER_BYTES = 16;

/** AES-128-CTR with the packet header as the counter block, as `MqttProtocol::CryptAesCtr`. */
export function aesCtr(key: Buffer, iv: Uint8Array, data: Uint8Array): Buffer {
  const cipher = createCipheriv('aes-128-ctr', key, iv);
  return Buffer.concat([cipher.update(data), cipher.final()]);
}

/** One uplink datagram as `MqttProtocol::SendAudio` writes it: the nonce with length, timestamp and sequence written over it, then the encrypted packet. */
export function sealUplink(key: Buffer, nonce: Buffer, payload: Uint8Array, timestamp: number, sequence: number): Buffer {
  const header = Buffer.from(nonce);
  header.writeUInt16BE(payload.length, 2);
  header.writeUInt32BE(timestamp >>> 0, 8);
  header.writeUInt32BE(sequence >>> 0, 12);
  return Buffer.concat([header, aesCtr(key, header, payload)]);
}
