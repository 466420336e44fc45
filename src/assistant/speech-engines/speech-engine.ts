/** Mono 16-bit PCM: what a device's microphone gives once decoded, and what its speaker plays. */
export interface PcmAudio {
  samples: Int16Array;
  /** Samples per second. */
  sampleRate: number;
}

export interface RecognitionOptions {
  /** ISO-639-1 code of what was said; the engine detects it when absent. */
  language?: string;
  /** Aborts the recognition: the request is ended and the promise rejects with the signal's reason. */
  signal?: AbortSignal;
}

export interface Transcript {
  text: string;
  /** The language the engine heard, when it says. */
  language?: string;
}

/**
 * Speech to text for one utterance, whole: the session hands it what the device said once voice
 * activity ends (or the user let go of the button), and waits for the text. A streaming engine
 * (partial transcripts while the user speaks) would be another interface beside this one; the
 * session would not change for an engine that only implements this one.
 * Rejects with a `SpeechEngineError` when the engine fails, so the session can alert the device.
 */
export interface SpeechRecognizer {
  transcribe(audio: PcmAudio, options?: RecognitionOptions): Promise<Transcript>;
}

export interface SynthesisOptions {
  /** The engine's voice; its configured voice when absent. */
  voice?: string;
  /**
   * ISO-639-1 code of the text, for engines whose voices or phonemizers are per language. The
   * OpenAI speech API has no such field (the voice decides), so its engine does not send it.
   */
  language?: string;
  /**
   * Stops the speech: the request is ended. Before the speech starts, `synthesize` rejects with
   * the signal's reason; once it plays, its chunks simply end (what was played is not an error).
   */
  signal?: AbortSignal;
}

/**
 * A text being spoken: its rate, known before the first chunk (a WAV answer's header has been
 * read by then), and its samples in the order and pieces they arrive.
 */
export interface SynthesizedSpeech {
  sampleRate: number;
  /**
   * Mono 16-bit PCM, chunk by chunk as the engine sends it, so the first sentence plays while
   * the rest is synthesized. Leaving the loop early ends the request; a failure mid-way throws a
   * `SpeechEngineError`. Iterate it (or abort the signal): the request stays open until then.
   */
  chunks: AsyncIterable<Int16Array>;
}

/**
 * Text to speech, streamed: `synthesize` settles once the engine has started to answer (an HTTP
 * error or an unreachable server rejects it at once, with a `SpeechEngineError`), and the audio
 * follows in chunks. A sentence at a time is the intended use: the session speaks one while the
 * model writes the next.
 */
export interface SpeechSynthesizer {
  synthesize(text: string, options?: SynthesisOptions): Promise<SynthesizedSpeech>;
}

/**
 * DI token of the {@link SpeechRecognizer}, or `null` when recognition is off (`STT_BASE_URL`
 * unset): a provider of your own under this token replaces the OpenAI-compatible one.
 */
export const SPEECH_RECOGNIZER = Symbol('SPEECH_RECOGNIZER');

/** DI token of the {@link SpeechSynthesizer}, or `null` when synthesis is off (`TTS_BASE_URL` unset). */
export const SPEECH_SYNTHESIZER = Symbol('SPEECH_SYNTHESIZER');
