import { APIConnectionError, APIError } from 'openai';
import { redactUrl } from '../../core/logging/redact';
import type { EngineRequest } from './engine-request';
import { SpeechEngineError, SpeechEngineKind } from './speech-engine.error';
import { WavFormatError } from './wav';

/** What a failure message names: the engine, its server, and the prefix of its settings. */
export interface EngineIdentity {
  engine: SpeechEngineKind;
  baseUrl: string;
  /** `STT` or `TTS`. */
  settings: string;
  timeoutMs: number;
}

/** The engine's name in a sentence. */
const TITLES: Record<SpeechEngineKind, string> = { recognizer: 'speech recognition', synthesizer: 'speech synthesis' };

/**
 * Why a speech request failed, as what the caller receives: its own reason when it aborted, else
 * a {@link SpeechEngineError} whose message names the server and the setting to look at, and
 * never the server's body (the device may be told; the log has the `cause`).
 */
export function engineFailure(error: unknown, request: EngineRequest, identity: EngineIdentity): unknown {
  if (request.cancelled) return request.signal.reason ?? error;
  if (error instanceof SpeechEngineError) return error;
  const { engine, settings } = identity;
  const server = `The ${TITLES[engine]} server at ${redactUrl(identity.baseUrl)}`;
  const failure = (code: SpeechEngineError['code'], message: string) => new SpeechEngineError(engine, code, message, { cause: error });
  if (request.timedOut) {
    const wait = engine === 'recognizer' ? 'did not answer within' : 'stayed silent for';
    return failure('timeout', `${server} ${wait} ${identity.timeoutMs / 1000} s: check that it is not overloaded, or raise ${settings}_TIMEOUT`);
  }
  if (error instanceof APIConnectionError) return failure('unreachable', `${server} could not be reached: check ${settings}_BASE_URL`);
  if (error instanceof APIError && error.status !== undefined) {
    const check =
      error.status === 401 || error.status === 403
        ? `${settings}_API_KEY`
        : error.status === 404
          ? `${settings}_BASE_URL (it should end in /v1/) and ${settings}_MODEL`
          : error.status === 400 || error.status === 422
            ? `${settings}_MODEL${engine === 'synthesizer' ? `, ${settings}_VOICE and ${settings}_FORMAT` : ` and ${settings}_LANGUAGE`}`
            : "the server's log";
    return failure('http-error', `${server} answered HTTP ${error.status}: check ${check}`);
  }
  return failure(
    'bad-answer',
    `${server} gave an answer that could not be read (${reasonOf(error)}): check that ${settings}_BASE_URL is an OpenAI-compatible server`,
  );
}

/** A short reason for an unreadable answer, without the body it was read from. */
function reasonOf(error: unknown): string {
  if (error instanceof SyntaxError) return 'not JSON';
  if (error instanceof WavFormatError) return `a WAV that does not parse: ${error.message}`;
  if (error instanceof UnreadableAnswer) return error.message;
  return 'it broke off';
}

/** An answer that arrived but is not what was asked: the reason is safe to show (no server text). */
export class UnreadableAnswer extends Error {
  override readonly name = 'UnreadableAnswer';
}
