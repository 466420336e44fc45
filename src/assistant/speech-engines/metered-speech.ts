import type { PcmAudio, RecognitionOptions, SpeechRecognizer, SpeechSynthesizer, SynthesisOptions } from './speech-engine';

/**
 * What speech costs, asked before it is spent: a rejection refuses the recognition or the
 * synthesis (its error is what the engine's caller gets), and nothing reaches the engine. The
 * amount is known before, so it is charged then, whole: `budgets` counts it atomically with the
 * check.
 */
export interface SpeechMeter {
  /** Before an utterance of `audioMs` milliseconds is recognized. */
  recognizing(audioMs: number): Promise<void>;
  /** Before a text of `characters` characters (code points) is synthesized. */
  synthesizing(characters: number): Promise<void>;
}

/** How long `audio` lasts, in whole milliseconds. */
export const audioMs = (audio: PcmAudio): number => Math.round((audio.samples.length * 1000) / audio.sampleRate);

/** `engine`, each recognition first spent on `meter`. */
export function meteredRecognizer(engine: SpeechRecognizer, meter: SpeechMeter): SpeechRecognizer {
  return {
    transcribe: async (audio: PcmAudio, options?: RecognitionOptions) => {
      await meter.recognizing(audioMs(audio));
      return engine.transcribe(audio, options);
    },
  };
}

/** `engine`, each synthesis first spent on `meter`. */
export function meteredSynthesizer(engine: SpeechSynthesizer, meter: SpeechMeter): SpeechSynthesizer {
  return {
    synthesize: async (text: string, options?: SynthesisOptions) => {
      await meter.synthesizing([...text].length);
      return engine.synthesize(text, options);
    },
  };
}
