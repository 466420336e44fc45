/**
 * A packet that could not be decoded: corrupt, empty, or over the size bound. A session counts
 * these and drops the packet; the decoder stays usable for the next one.
 */
export class OpusPacketError extends Error {
  constructor(
    readonly reason: 'too-large' | 'empty' | 'invalid',
    detail: string,
  ) {
    super(`Opus packet dropped (${reason}): ${detail}`);
    this.name = 'OpusPacketError';
  }
}
