import { OpusDecoder } from '../../../src/assistant/audio/opus-decoder';
import { OPUS_SAMPLE_RATES, OpusSampleRate } from '../../../src/assistant/audio/opus-format';

/**
 * The device's playback path (main/audio/audio_service.*), on a clock: packets wait in a decode
 * queue of 2400 / 60 = 40 packets, are decoded into a playback queue of 2 frames, and play one
 * after another in real time. A packet that finds the decode queue full is dropped (the firmware
 * pushes without waiting), so a server that sends faster than real time loses what is more than
 * about 2.5 s ahead. The decoder is made for the server hello's sample rate and frame duration:
 * a packet longer than that frame duration does not fit its output buffer and is not played,
 * and at a rate libopus does not support nothing plays.
 */

export const DECODE_QUEUE_PACKETS = 40;
export const PLAYBACK_QUEUE_FRAMES = 2;

export type PlaybackOutcome = 'queued' | 'decode-queue-full' | 'undecodable' | 'longer-than-frame-duration';

interface ScheduledFrame {
  pcm: Int16Array;
  startMs: number;
  endMs: number;
  timestamp: number;
  /** A decoder reset dropped it before it started. */
  cut: boolean;
  onCut?: () => void;
  /** Its timestamp was handed to the encoder (server-side echo cancellation) or cleared. */
  timestampTaken: boolean;
}

export class DeviceSpeaker {
  private decoder?: OpusDecoder;
  private sampleRate = 24_000;
  private frameDurationMs = 60;
  private readonly frames: ScheduledFrame[] = [];
  private playbackEndMs = 0;

  constructor(private readonly now: () => number) {
    this.configure(this.sampleRate, this.frameDurationMs);
  }

  /** Audio parameters of the server hello (its defaults, 24 kHz and 60 ms, until one arrives). */
  configure(sampleRate: number, frameDurationMs: number): void {
    if (sampleRate === this.sampleRate && frameDurationMs === this.frameDurationMs && this.decoder) return;
    this.decoder?.free();
    this.decoder = (OPUS_SAMPLE_RATES as readonly number[]).includes(sampleRate) ? new OpusDecoder(sampleRate as OpusSampleRate) : undefined;
    this.sampleRate = sampleRate;
    this.frameDurationMs = frameDurationMs;
  }

  /** A packet the device accepted while speaking: queued to play after what is queued, or dropped. */
  accept(payload: Uint8Array, timestamp: number, onCut?: () => void): PlaybackOutcome {
    const now = this.now();
    const waiting = this.frames.filter((frame) => !frame.cut && frame.startMs > now).length;
    if (waiting >= DECODE_QUEUE_PACKETS + PLAYBACK_QUEUE_FRAMES) return 'decode-queue-full';
    if (!this.decoder) return 'undecodable';
    let pcm: Int16Array;
    try {
      pcm = this.decoder.decode(payload).slice();
    } catch {
      return 'undecodable';
    }
    if (pcm.length > (this.sampleRate / 1000) * this.frameDurationMs) return 'longer-than-frame-duration';
    const startMs = Math.max(now, this.playbackEndMs);
    this.playbackEndMs = startMs + (pcm.length * 1000) / this.sampleRate;
    this.frames.push({ pcm, startMs, endMs: this.playbackEndMs, timestamp, cut: false, onCut, timestampTaken: false });
    return 'queued';
  }

  /** AudioService::ResetDecoder: what has not started playing is dropped, with the decoder's state and the echo timestamps. */
  reset(): void {
    const now = this.now();
    for (const frame of this.frames) {
      if (frame.startMs > now && !frame.cut) {
        frame.cut = true;
        frame.onCut?.();
      }
      frame.timestampTaken = true;
    }
    const playing = this.frames.filter((frame) => !frame.cut);
    this.playbackEndMs = Math.min(this.playbackEndMs, playing.length ? playing[playing.length - 1].endMs : now);
    this.decoder?.free();
    this.decoder = undefined;
    this.configure(this.sampleRate, this.frameDurationMs);
  }

  /** When what is queued will have played (now or in the past when idle). */
  get drainedAtMs(): number {
    return this.playbackEndMs;
  }

  isIdle(): boolean {
    return this.playbackEndMs <= this.now();
  }

  /**
   * Timestamps of frames that finished playing since the last call, oldest first: a device built
   * for server-side echo cancellation stamps its next microphone packets with them.
   */
  takePlayedTimestamps(): number[] {
    const now = this.now();
    const played = this.frames.filter((frame) => !frame.cut && !frame.timestampTaken && frame.endMs <= now);
    for (const frame of played) frame.timestampTaken = true;
    return played.filter((frame) => frame.timestamp > 0).map((frame) => frame.timestamp);
  }

  /** Everything played or queued to play, as one stream at the server's sample rate. */
  playedPcm(): Int16Array {
    const kept = this.frames.filter((frame) => !frame.cut);
    const pcm = new Int16Array(kept.reduce((total, frame) => total + frame.pcm.length, 0));
    let offset = 0;
    for (const frame of kept) {
      pcm.set(frame.pcm, offset);
      offset += frame.pcm.length;
    }
    return pcm;
  }

  playedDurationMs(): number {
    return this.frames.filter((frame) => !frame.cut).reduce((total, frame) => total + frame.endMs - frame.startMs, 0);
  }

  get outputSampleRate(): number {
    return this.sampleRate;
  }

  free(): void {
    this.decoder?.free();
    this.decoder = undefined;
  }
}
