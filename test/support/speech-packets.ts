import { OpusEncoder } from '../../src/assistant/audio/opus-encoder';
import { PcmFramer } from '../../src/assistant/audio/pcm-framer';
import { Resampler } from '../../src/assistant/audio/resampler';
import { speak, SpeakOptions } from './espeak';

/** What a device's microphone would send for a stretch of audio: 16 kHz mono Opus in 60 ms packets. */
export interface UplinkAudio {
  packets: Uint8Array[];
  /** Samples of speech (16 kHz) the packets carry, without the padding around it. */
  speechSamples: number;
}

export const UPLINK_FORMAT = { sampleRate: 16_000, frameDurationMs: 60 } as const;

/** `text` spoken by espeak-ng, at 16 kHz. */
export async function speechAt16k(text: string, options?: SpeakOptions): Promise<Int16Array> {
  const spoken = await speak(text, options);
  const resampler = await Resampler.open(spoken.sampleRate, UPLINK_FORMAT.sampleRate);
  const samples = new Int16Array([...resampler.push(spoken.samples), ...resampler.flush()]);
  resampler.free();
  return samples;
}

/** `speech` between `beforeMs` and `afterMs` of silence, encoded by the real Opus encoder as a device would send it. */
export function uplinkPackets(speech: Int16Array, beforeMs: number, afterMs: number): UplinkAudio {
  const rate = UPLINK_FORMAT.sampleRate;
  const audio = new Int16Array(Math.round(((beforeMs + afterMs) * rate) / 1000) + speech.length);
  audio.set(speech, Math.round((beforeMs * rate) / 1000));
  const framer = new PcmFramer((rate * UPLINK_FORMAT.frameDurationMs) / 1000);
  const frames = [...framer.push(audio), ...[framer.flush()].filter((frame): frame is Int16Array => frame !== undefined)];
  const encoder = new OpusEncoder(UPLINK_FORMAT);
  const packets = frames.map((frame) => encoder.encode(frame).slice());
  encoder.free();
  return { packets, speechSamples: speech.length };
}
