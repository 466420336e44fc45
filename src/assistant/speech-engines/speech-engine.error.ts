/** Which of the engines failed. */
export type SpeechEngineKind = 'recognizer' | 'synthesizer';

/**
 * How an engine failed, for the session to choose what it tells the device and for metrics: the
 * server could not be reached, took too long, answered an HTTP error, or answered something that
 * is not what was asked (not JSON, no text, a WAV that does not parse, a stream that broke off).
 */
export type SpeechEngineFailure = 'unreachable' | 'timeout' | 'http-error' | 'bad-answer';

/**
 * A speech engine's failure, as the session turns it into an alert to the device: one type
 * whatever the engine, with a message an operator can act on (it names the setting to check)
 * and never the server's body; the original error is its `cause`, for the log.
 */
export class SpeechEngineError extends Error {
  override readonly name = 'SpeechEngineError';

  constructor(
    readonly engine: SpeechEngineKind,
    readonly code: SpeechEngineFailure,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
