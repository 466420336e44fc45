/**
 * How the device's user is heard: `manual` (push to talk: the caller says when the utterance
 * stops), `auto` and `realtime` (voice activity detection finds its end). xiaozhi's
 * `listen.mode`.
 */
export type ListeningMode = 'manual' | 'auto' | 'realtime';

/** Why an utterance ended: silence after speech, the caller's `stop()`, or the length bound. */
export type UtteranceEndReason = 'speech-end' | 'stopped' | 'max-length';

/**
 * What a {@link VoiceInput} reports, in this order for each utterance: `speech-start` (auto and
 * realtime, when speech was first heard: a session may stop speaking to let the user barge in),
 * `utterance-end`, then exactly one of `transcript`, `empty` or `failed`. Nothing follows
 * `close()`.
 */
export type VoiceInputEvent =
  | { type: 'speech-start' }
  | { type: 'utterance-end'; reason: UtteranceEndReason; durationMs: number }
  | { type: 'transcript'; text: string; language?: string }
  /** No speech was heard (the recognizer was not asked), or it heard nothing it could write. */
  | { type: 'empty'; reason: 'no-speech' | 'blank-transcript' }
  /** The recognizer failed: a `SpeechEngineError` when the engine did, so the session can alert the device. */
  | { type: 'failed'; error: Error };
