import OpenAI, { toFile } from 'openai';
import type { SpeechRecognizerConfig } from '../../config/gateway-config';
import { EngineIdentity, engineFailure, UnreadableAnswer } from './engine-failure';
import { EngineRequest } from './engine-request';
import { speechClient } from './openai-speech-client';
import type { PcmAudio, RecognitionOptions, SpeechRecognizer, Transcript } from './speech-engine';
import { encodeWav } from './wav';

/**
 * Recognition by any OpenAI-compatible transcription server (speaches, OpenAI, a whisper.cpp
 * server...): the utterance is uploaded as a 16-bit mono WAV to `/v1/audio/transcriptions`,
 * JSON asked back. `STT_LANGUAGE` is sent unless the caller names a language; with neither the
 * engine detects it. The whole request runs under `STT_TIMEOUT`.
 */
export class OpenAiRecognizer implements SpeechRecognizer {
  private readonly client: OpenAI;
  private readonly identity: EngineIdentity;

  constructor(private readonly config: SpeechRecognizerConfig) {
    this.client = speechClient(config);
    this.identity = { engine: 'recognizer', baseUrl: config.baseUrl, settings: 'STT', timeoutMs: config.timeoutMs };
  }

  async transcribe(audio: PcmAudio, options: RecognitionOptions = {}): Promise<Transcript> {
    const request = new EngineRequest(options.signal, this.config.timeoutMs);
    request.arm();
    try {
      const file = await toFile(encodeWav(audio), 'speech.wav', { type: 'audio/wav' });
      const language = options.language ?? this.config.language;
      const answer: unknown = await this.client.audio.transcriptions.create(
        { file, model: this.config.model, response_format: 'json', ...(language ? { language } : {}) },
        { signal: request.signal },
      );
      return transcriptOf(answer);
    } catch (error) {
      throw engineFailure(error, request, this.identity);
    } finally {
      request.end();
    }
  }
}

/**
 * The transcript in a JSON answer: `text` must be a string (empty when nothing was said: that is
 * the session's to handle, not a failure); `language` is kept when the server names it.
 */
function transcriptOf(answer: unknown): Transcript {
  if (typeof answer !== 'object' || answer === null) throw new UnreadableAnswer(typeof answer === 'string' && answer.trim() === '' ? 'empty' : 'not JSON');
  const { text, language } = answer as { text?: unknown; language?: unknown };
  if (typeof text !== 'string') throw new UnreadableAnswer('no text in it');
  return typeof language === 'string' && language !== '' ? { text: text.trim(), language } : { text: text.trim() };
}
