/** Sample rates libopus encodes and decodes at. */
export const OPUS_SAMPLE_RATES = [8000, 12000, 16000, 24000, 48000] as const;
export type OpusSampleRate = (typeof OPUS_SAMPLE_RATES)[number];

/** Frame durations an Opus packet may carry, in milliseconds. */
export const OPUS_FRAME_DURATIONS_MS = [10, 20, 40, 60] as const;
export type OpusFrameDurationMs = (typeof OPUS_FRAME_DURATIONS_MS)[number];

/**
 * Largest packet accepted by default: RFC 6716 (3.2.1) caps one Opus frame at 1275 bytes, and a
 * voice device's 60 ms packet at speech bitrates is a few hundred bytes, so anything larger is a
 * broken or hostile packet, refused before it reaches libopus.
 */
export const OPUS_MAX_PACKET_BYTES = 1275;

/**
 * What both ends of a voice connection agree on (xiaozhi's `audio_params`): mono only, since
 * voice devices have one microphone and one speaker.
 */
export interface OpusFormat {
  sampleRate: OpusSampleRate;
  frameDurationMs: OpusFrameDurationMs;
}

/** Samples in one frame of `format`. */
export function samplesPerFrame(format: OpusFormat): number {
  return (format.sampleRate * format.frameDurationMs) / 1000;
}

/** Throws unless libopus works at `sampleRate`, which comes from a device's hello. */
export function checkOpusSampleRate(sampleRate: number): void {
  if (!(OPUS_SAMPLE_RATES as readonly number[]).includes(sampleRate))
    throw new RangeError(`Opus cannot work at ${sampleRate} Hz; use one of ${OPUS_SAMPLE_RATES.join(', ')}`);
}

/** Throws unless libopus can work at `format`: the rate and duration come from a device's hello. */
export function checkOpusFormat(format: OpusFormat): void {
  checkOpusSampleRate(format.sampleRate);
  if (!OPUS_FRAME_DURATIONS_MS.includes(format.frameDurationMs))
    throw new RangeError(`Opus frames of ${format.frameDurationMs} ms are not supported; use one of ${OPUS_FRAME_DURATIONS_MS.join(', ')}`);
}
