import { int16ToFloat32 } from './pcm';
import { PcmFramer } from './pcm-framer';
import { SILERO_SAMPLE_RATE, SILERO_WINDOW_SAMPLES, SileroVadStream } from './silero-vad-model';

/** When speech is taken to begin and end (`VAD_*` settings). */
export interface VoiceActivitySettings {
  /** Probability at or above which a window starts speech. */
  startThreshold: number;
  /** Probability below which a window counts as silence once speech has started (hysteresis: below the start threshold). */
  endThreshold: number;
  /** Speech shorter than this is not reported (a cough, a click, a door). */
  minSpeechMs: number;
  /** Silence that ends speech: longer than the pauses between words. */
  silenceMs: number;
}

/** Speech began or ended, `atMs` after the stream's first sample. */
export type VoiceActivityEvent = { type: 'speech-start'; atMs: number } | { type: 'speech-end'; atMs: number };

const WINDOW_MS = (SILERO_WINDOW_SAMPLES * 1000) / SILERO_SAMPLE_RATE;

/**
 * Tells when a device's user starts and stops talking, from 16 kHz mono PCM in chunks of any size,
 * so the session knows when to listen and when an utterance is over without waiting for the
 * device. Silero VAD judges each 32 ms window; a start above `startThreshold` becomes speech once
 * it has lasted `minSpeechMs`, and speech ends after `silenceMs` of windows below
 * `endThreshold`. Events carry the stream time where speech began and where the silence began, not
 * when they were confirmed, so a recognizer can be handed exactly the spoken part.
 * One per device: the model's recurrent state is this stream's; the model itself is shared.
 */
export class VoiceActivityDetector {
  private readonly framer = new PcmFramer(SILERO_WINDOW_SAMPLES);
  private readonly stream = new SileroVadStream();
  private windows = 0;
  private candidateStartMs: number | undefined;
  private speaking = false;
  private silenceStartMs: number | undefined;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(readonly settings: VoiceActivitySettings) {
    if (settings.endThreshold > settings.startThreshold) throw new RangeError('the end threshold must not be above the start threshold');
  }

  /** Whether the last window analysed was inside speech that has been reported. */
  get inSpeech(): boolean {
    return this.speaking;
  }

  /** The speech starts and ends that `chunk` reveals, in order. Calls are analysed one after another, in the order made. */
  push(chunk: Int16Array): Promise<VoiceActivityEvent[]> {
    const windows = this.framer.push(chunk);
    const analysed = this.queue.then(() => this.analyse(windows));
    this.queue = analysed.catch(() => undefined);
    return analysed;
  }

  /** Forgets the stream: the next sample is time 0 and nobody is speaking. */
  reset(): void {
    this.framer.flush();
    this.stream.reset();
    this.windows = 0;
    this.candidateStartMs = undefined;
    this.speaking = false;
    this.silenceStartMs = undefined;
  }

  private async analyse(windows: Int16Array[]): Promise<VoiceActivityEvent[]> {
    const events: VoiceActivityEvent[] = [];
    for (const window of windows) {
      const probability = await this.stream.probability(int16ToFloat32(window));
      const event = this.judge(probability, this.windows * WINDOW_MS);
      this.windows += 1;
      if (event) events.push(event);
    }
    return events;
  }

  private judge(probability: number, atMs: number): VoiceActivityEvent | undefined {
    const { startThreshold, endThreshold, minSpeechMs, silenceMs } = this.settings;
    const endMs = atMs + WINDOW_MS;
    if (this.candidateStartMs === undefined) {
      if (probability >= startThreshold) this.candidateStartMs = atMs;
      return undefined;
    }
    if (probability >= endThreshold) {
      this.silenceStartMs = undefined;
    } else {
      this.silenceStartMs ??= atMs;
      if (endMs - this.silenceStartMs >= silenceMs) {
        const event: VoiceActivityEvent | undefined = this.speaking ? { type: 'speech-end', atMs: this.silenceStartMs } : undefined;
        this.candidateStartMs = undefined;
        this.silenceStartMs = undefined;
        this.speaking = false;
        return event;
      }
    }
    if (!this.speaking && (this.silenceStartMs ?? endMs) - this.candidateStartMs >= minSpeechMs) {
      this.speaking = true;
      return { type: 'speech-start', atMs: this.candidateStartMs };
    }
    return undefined;
  }
}
