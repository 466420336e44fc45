/** Whether this machine stores an Int16Array's samples little-endian, as WAV and raw PCM are. */
const HOST_IS_LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** Samples from 16-bit little-endian bytes (an even count), copied: the bytes may sit at an odd offset. */
export function samplesFromBytes(bytes: Uint8Array): Int16Array {
  const samples = new Int16Array(bytes.length >> 1);
  const view = new Uint8Array(samples.buffer);
  view.set(bytes.subarray(0, samples.length * 2));
  if (!HOST_IS_LITTLE_ENDIAN) for (let at = 0; at < view.length; at += 2) [view[at], view[at + 1]] = [view[at + 1], view[at]];
  return samples;
}

/** 16-bit little-endian bytes of `samples`, written into `target` at `offset`. */
export function writeSamples(samples: Int16Array, target: DataView, offset: number): void {
  for (let index = 0; index < samples.length; index += 1) target.setInt16(offset + index * 2, samples[index], true);
}

/**
 * Samples as they arrive from a byte stream, one chunk per piece received: a piece that ends in
 * the middle of a sample keeps its odd byte for the next (a network read knows nothing of
 * samples). Stops after `limit` bytes when given (a WAV's data chunk may be followed by others);
 * a lone byte at the end is half a sample and dropped.
 */
export async function* pcmChunks(bytes: AsyncIterable<Uint8Array>, limit = Infinity): AsyncGenerator<Int16Array, void, undefined> {
  let left = limit;
  let carry: number | undefined;
  for await (const piece of bytes) {
    if (left <= 0) return;
    let part = piece.length > left ? piece.subarray(0, left) : piece;
    left -= part.length;
    if (carry !== undefined && part.length > 0) {
      const joined = new Uint8Array(part.length + 1);
      joined[0] = carry;
      joined.set(part, 1);
      part = joined;
      carry = undefined;
    }
    if (part.length % 2 === 1) carry = part[part.length - 1];
    if (part.length >= 2) yield samplesFromBytes(part);
  }
}
