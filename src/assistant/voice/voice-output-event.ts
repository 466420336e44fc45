/** How much of a sentence reached the device: all its frames, some, or none. */
export type SpokenExtent = 'spoken' | 'partly' | 'unspoken';

/** One sentence of an answer and how much of it was sent, so the history keeps only what the user heard. */
export interface SentenceReport {
  text: string;
  spoken: SpokenExtent;
}

/** How an answer's speech ended: all played, cut by `abort()`, or ended by a synthesis failure (what was queued before it still plays). */
export interface VoiceOutputSummary {
  outcome: 'played' | 'aborted' | 'failed';
  sentences: SentenceReport[];
  /** The failure when `outcome` is `failed`: a `SpeechEngineError` when the engine failed. */
  error?: Error;
}

/**
 * What a {@link VoiceOutput} reports, in order: `sentence-start` just before each sentence's first
 * frame is sent (xiaozhi's `tts sentence_start`), then one `stopped` (its `tts stop`).
 */
export type VoiceOutputEvent = { type: 'sentence-start'; text: string } | ({ type: 'stopped' } & VoiceOutputSummary);
