import { OpusDecoder } from '../audio/opus-decoder';
import { checkOpusFormat, OpusFormat } from '../audio/opus-format';
import { OpusPacketError } from '../audio/opus-packet.error';
import { SILERO_SAMPLE_RATE } from '../audio/silero-vad-model';
import { VoiceActivityDetector, VoiceActivityEvent, VoiceActivitySettings } from '../audio/voice-activity-detector';
import type { SpeechRecognizer } from '../speech-engines/speech-engine';
import { AudioRateBudget } from './audio-rate-budget';
import { StreamBuffer } from './stream-buffer';
import type { ListeningMode, UtteranceEndReason, VoiceInputEvent } from './voice-input-event';

/** The `voice` settings an input uses (`VAD_*`, `VOICE_MAX_UTTERANCE_S`, `VOICE_PREROLL_MS`). */
export interface VoiceInputSettings {
  vad: VoiceActivitySettings;
  maxUtteranceMs: number;
  prerollMs: number;
}

/** The part of a voice activity detector an input uses; tests may pass their own. */
export type SpeechDetector = Pick<VoiceActivityDetector, 'push' | 'reset'>;

export interface VoiceInputOptions {
  /** The device's uplink audio, from its hello: mono Opus at 16 kHz, the rate voice activity detection runs at. */
  format: OpusFormat;
  mode: ListeningMode;
  recognizer: SpeechRecognizer;
  settings: VoiceInputSettings;
  onEvent: (event: VoiceInputEvent) => void;
  /** ISO-639-1 code of what the user speaks, when the session knows it. */
  language?: string;
  /** Milliseconds from any fixed origin, for the audio budget; tests pass a fake clock. */
  now?: () => number;
  detector?: SpeechDetector;
}

/** Packets dropped, by why: not Opus, over the audio budget, or sent while an utterance was being recognized. */
export interface VoiceInputCounters {
  undecodable: number;
  overBudget: number;
  whileRecognizing: number;
}

/** Audio kept after the detector's end of speech (where silence began), so a fading last consonant reaches the recognizer. */
const POSTROLL_MS = 200;
/** Audio a device may send beyond real time: twice as fast, sustained for two seconds (a burst after a network stall). */
const BUDGET = { speed: 2, burstMs: 2000 };
/** Pre-speech audio kept beyond the pre-roll: the detector reports speech once it has lasted its minimum, from where it began. */
const DETECTION_SLACK_MS = 500;

/**
 * One device connection's microphone, protocol-neutral: Opus packets in, one recognized text per
 * utterance out (see {@link VoiceInputEvent}). In `auto` and `realtime` mode Silero VAD finds
 * where the utterance begins and ends, and the recognizer gets it from a pre-roll before speech
 * to just after its end; in `manual` mode the utterance runs from the first packet to
 * {@link stop}, and the detector only tells whether anyone spoke. Either way an utterance never
 * exceeds `maxUtteranceMs`, and one in which no speech was heard never reaches the recognizer.
 *
 * Made on a connection's first audio, not at connect: the decoder and detector cost memory a
 * connection without audio should not pay. Hostile or broken input costs counts, not the
 * session: a packet that does not decode is dropped, and audio beyond twice real time (after a
 * burst allowance) is refused. While an utterance is being recognized, packets are dropped; the
 * next utterance is listened for once its result is reported.
 */
export class VoiceInput {
  readonly counters: VoiceInputCounters = { undecodable: 0, overBudget: 0, whileRecognizing: 0 };
  private readonly decoder: OpusDecoder;
  private readonly detector: SpeechDetector;
  private readonly budget: AudioRateBudget;
  private readonly buffer = new StreamBuffer();
  private phase: 'listening' | 'recognizing' | 'closed' = 'listening';
  private utteranceStart: number | undefined;
  private heardSpeech = false;
  private work: Promise<void> = Promise.resolve();
  private recognition: AbortController | undefined;

  constructor(private readonly options: VoiceInputOptions) {
    checkOpusFormat(options.format);
    if (options.format.sampleRate !== SILERO_SAMPLE_RATE)
      throw new RangeError(`a device's audio is heard at ${SILERO_SAMPLE_RATE} Hz, not ${options.format.sampleRate} Hz`);
    this.decoder = new OpusDecoder(options.format.sampleRate);
    this.detector = options.detector ?? new VoiceActivityDetector(options.settings.vad);
    this.budget = new AudioRateBudget({ ...BUDGET, now: options.now ?? (() => performance.now()) });
    this.beginUtterance();
  }

  /**
   * Takes one packet. Resolves once it has been analysed (calls are analysed in order); a packet
   * that is refused or cannot be decoded is counted and resolves at once.
   */
  push(packet: Uint8Array): Promise<void> {
    if (this.phase === 'closed') return Promise.resolve();
    if (this.phase === 'recognizing') return this.count('whileRecognizing');
    if (!this.budget.admit(this.options.format.frameDurationMs)) return this.count('overBudget');
    let samples: Int16Array;
    try {
      samples = this.decoder.decode(packet).slice();
    } catch (error) {
      if (error instanceof OpusPacketError) return this.count('undecodable');
      throw error;
    }
    return this.enqueue(() => this.listen(samples));
  }

  /** The user stopped (xiaozhi's `listen.stop`): the utterance ends with what has arrived. Resolves once that is decided. */
  stop(): Promise<void> {
    return this.enqueue(async () => {
      if (this.phase === 'listening') this.finishUtterance('stopped', this.buffer.end);
    });
  }

  /** Frees the decoder and the detector's state and aborts a recognition in flight; no event follows. */
  close(): void {
    if (this.phase === 'closed') return;
    this.phase = 'closed';
    this.recognition?.abort(new Error('The voice input closed'));
    this.decoder.free();
    this.detector.reset();
    this.buffer.clear();
  }

  private count(counter: keyof VoiceInputCounters): Promise<void> {
    this.counters[counter] += 1;
    return Promise.resolve();
  }

  private enqueue(step: () => Promise<void>): Promise<void> {
    const done = this.work.then(step);
    this.work = done.catch(() => undefined);
    return done;
  }

  private async listen(samples: Int16Array): Promise<void> {
    if (this.phase !== 'listening') {
      if (this.phase === 'recognizing') this.counters.whileRecognizing += 1;
      return;
    }
    this.buffer.append(samples);
    const events = await this.detector.push(samples);
    if (this.phase !== 'listening') return;
    for (const event of events) if (this.onActivity(event)) return;
    const start = this.utteranceStart;
    if (start === undefined) {
      this.buffer.dropBefore(this.buffer.end - this.samplesIn(this.options.settings.prerollMs + this.options.settings.vad.minSpeechMs + DETECTION_SLACK_MS));
      return;
    }
    const maxSamples = this.samplesIn(this.options.settings.maxUtteranceMs);
    if (this.buffer.end - start >= maxSamples) this.finishUtterance('max-length', start + maxSamples);
  }

  /** Handles one detector event; whether it ended the utterance. */
  private onActivity(event: VoiceActivityEvent): boolean {
    const manual = this.options.mode === 'manual';
    if (event.type === 'speech-start') {
      if (!this.heardSpeech && !manual) {
        this.utteranceStart = Math.max(this.buffer.start, this.samplesIn(event.atMs - this.options.settings.prerollMs));
        this.options.onEvent({ type: 'speech-start' });
      }
      this.heardSpeech = true;
      return false;
    }
    if (manual || !this.heardSpeech) return false;
    this.finishUtterance('speech-end', Math.min(this.buffer.end, this.samplesIn(event.atMs + POSTROLL_MS)));
    return true;
  }

  private finishUtterance(reason: UtteranceEndReason, end: number): void {
    const start = this.utteranceStart ?? this.buffer.start;
    const samples = this.buffer.copy(start, end);
    const heardSpeech = this.heardSpeech;
    this.options.onEvent({ type: 'utterance-end', reason, durationMs: (samples.length * 1000) / SILERO_SAMPLE_RATE });
    if (!heardSpeech) {
      this.options.onEvent({ type: 'empty', reason: 'no-speech' });
      this.beginUtterance();
      return;
    }
    this.phase = 'recognizing';
    this.buffer.clear();
    void this.recognize(samples);
  }

  private async recognize(samples: Int16Array): Promise<void> {
    const recognition = (this.recognition = new AbortController());
    let event: VoiceInputEvent;
    try {
      const transcript = await this.options.recognizer.transcribe(
        { samples, sampleRate: SILERO_SAMPLE_RATE },
        { signal: recognition.signal, ...(this.options.language ? { language: this.options.language } : {}) },
      );
      const text = transcript.text.trim();
      event =
        text === ''
          ? { type: 'empty', reason: 'blank-transcript' }
          : { type: 'transcript', text, ...(transcript.language ? { language: transcript.language } : {}) };
    } catch (error) {
      event = { type: 'failed', error: error instanceof Error ? error : new Error(String(error)) };
    }
    this.recognition = undefined;
    if (this.phase === 'closed') return;
    this.options.onEvent(event);
    this.beginUtterance();
  }

  /** Listens for a new utterance: the stream's clock, the detector and the buffer start again. */
  private beginUtterance(): void {
    this.detector.reset();
    this.buffer.clear();
    this.utteranceStart = this.options.mode === 'manual' ? 0 : undefined;
    this.heardSpeech = false;
    this.phase = 'listening';
  }

  private samplesIn(ms: number): number {
    return Math.round((ms * SILERO_SAMPLE_RATE) / 1000);
  }
}
