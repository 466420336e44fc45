import { samplesFromBytes, writeSamples } from './pcm-bytes';
import type { PcmAudio } from './speech-engine';

/** Bytes that are not a 16-bit mono PCM WAV, or not yet a whole one. */
export class WavFormatError extends Error {
  override readonly name = 'WavFormatError';
}

/** Where a WAV's samples are: a header read, its data not necessarily arrived. */
export interface WavHeader {
  sampleRate: number;
  /** Offset of the first sample byte. */
  dataOffset: number;
  /** Length of the data chunk; absent for a streamed WAV (size 0 or 0xFFFFFFFF), whose data is the rest. */
  dataBytes?: number;
}

const FORMAT_PCM = 1;
const FORMAT_EXTENSIBLE = 0xfffe;
/** The size a streaming writer puts in a chunk whose end it does not know yet (0 from some, all ones from others). */
const UNKNOWN_SIZES = new Set([0, 0xffffffff]);

const fourCc = (bytes: Uint8Array, at: number) => String.fromCharCode(...bytes.subarray(at, at + 4));

/** A 16-bit mono PCM WAV (RIFF, 44-byte header) of `audio`: what transcription servers take as a file. */
export function encodeWav({ samples, sampleRate }: PcmAudio): Uint8Array {
  const bytes = new Uint8Array(44 + samples.length * 2);
  const view = new DataView(bytes.buffer);
  const text = (at: number, value: string) =>
    bytes.set(
      [...value].map((c) => c.charCodeAt(0)),
      at,
    );
  text(0, 'RIFF');
  view.setUint32(4, 36 + samples.length * 2, true);
  text(8, 'WAVE');
  text(12, 'fmt ');
  view.setUint32(16, 16, true);
  view.setUint16(20, FORMAT_PCM, true);
  view.setUint16(22, 1, true);
  view.setUint32(24, sampleRate, true);
  view.setUint32(28, sampleRate * 2, true);
  view.setUint16(32, 2, true);
  view.setUint16(34, 16, true);
  text(36, 'data');
  view.setUint32(40, samples.length * 2, true);
  writeSamples(samples, view, 44);
  return bytes;
}

/**
 * The header of a WAV whose first `bytes` have arrived, chunk by chunk as RIFF lays them out
 * (`fmt ` first, then any `LIST` or `fact`, then `data`), or `undefined` while the `data`
 * chunk's header has not arrived yet. Throws {@link WavFormatError} for anything but 16-bit mono
 * PCM, plain or WAVE_FORMAT_EXTENSIBLE.
 */
export function readWavHeader(bytes: Uint8Array): WavHeader | undefined {
  if (bytes.length < 12) return undefined;
  if (fourCc(bytes, 0) !== 'RIFF' || fourCc(bytes, 8) !== 'WAVE') throw new WavFormatError('not a RIFF WAVE file');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let sampleRate: number | undefined;
  for (let at = 12; at + 8 <= bytes.length;) {
    const id = fourCc(bytes, at);
    const size = view.getUint32(at + 4, true);
    const body = at + 8;
    if (id === 'data') {
      if (sampleRate === undefined) throw new WavFormatError('its data chunk comes before its fmt chunk');
      return { sampleRate, dataOffset: body, dataBytes: UNKNOWN_SIZES.has(size) ? undefined : size };
    }
    if (id === 'fmt ') {
      if (size < 16) throw new WavFormatError(`its fmt chunk is ${size} bytes, too short`);
      if (body + Math.min(size, 26) > bytes.length) return undefined;
      sampleRate = pcmRateOf(view, body, size);
    }
    at = body + size + (size % 2);
  }
  return undefined;
}

/** The sample rate of a fmt chunk at `at`, when it describes 16-bit mono PCM. */
function pcmRateOf(view: DataView, at: number, size: number): number {
  let format = view.getUint16(at, true);
  const channels = view.getUint16(at + 2, true);
  const sampleRate = view.getUint32(at + 4, true);
  const bits = view.getUint16(at + 14, true);
  // WAVE_FORMAT_EXTENSIBLE names the real format in the first two bytes of its sub-format GUID.
  if (format === FORMAT_EXTENSIBLE && size >= 26) format = view.getUint16(at + 24, true);
  if (format !== FORMAT_PCM) throw new WavFormatError(`its format is ${format}, not PCM (1)`);
  if (channels !== 1 || bits !== 16) throw new WavFormatError(`it is ${channels}-channel ${bits}-bit, not mono 16-bit`);
  if (sampleRate === 0) throw new WavFormatError('its sample rate is 0');
  return sampleRate;
}

/**
 * The samples of a whole 16-bit mono PCM WAV. A data chunk that says it is longer than what
 * follows (a streamed WAV, or one cut short) gives the samples that are there.
 */
export function decodeWav(bytes: Uint8Array): PcmAudio {
  const header = readWavHeader(bytes);
  if (header === undefined) throw new WavFormatError('it ends before its data chunk');
  const end = header.dataBytes === undefined ? bytes.length : Math.min(bytes.length, header.dataOffset + header.dataBytes);
  const data = bytes.subarray(header.dataOffset, end);
  return { sampleRate: header.sampleRate, samples: samplesFromBytes(data.subarray(0, data.length - (data.length % 2))) };
}
