import OpenAI from 'openai';
import type { SpeechSynthesizerConfig } from '../../config/gateway-config';
import { EngineIdentity, engineFailure, UnreadableAnswer } from './engine-failure';
import { EngineRequest } from './engine-request';
import { speechClient } from './openai-speech-client';
import { pcmChunks } from './pcm-bytes';
import type { SpeechSynthesizer, SynthesisOptions, SynthesizedSpeech } from './speech-engine';
import { readWavHeader, WavFormatError } from './wav';

/** Most bytes a WAV answer may take to reach its data chunk: beyond, it is not a WAV we can play. */
const MAX_WAV_HEADER_BYTES = 64 * 1024;

/** Content types a server answers with when it sends an error or a page with status 200, not sound. */
const NOT_AUDIO = /^\s*(application\/json|text\/)/i;

/**
 * Synthesis by any OpenAI-compatible speech server (speaches, Kokoro-FastAPI, OpenAI...):
 * `/v1/audio/speech`, its body read as it streams. `pcm` answers are raw 16-bit mono
 * little-endian at `TTS_SAMPLE_RATE` (24 kHz at OpenAI); `wav` answers say their rate in their
 * header, which is read before `synthesize` settles. `TTS_TIMEOUT` bounds each wait for the
 * server (its first bytes, then each next piece), not the whole speech, which may be long.
 */
export class OpenAiSynthesizer implements SpeechSynthesizer {
  private readonly client: OpenAI;
  private readonly identity: EngineIdentity;

  constructor(private readonly config: SpeechSynthesizerConfig) {
    this.client = speechClient(config);
    this.identity = { engine: 'synthesizer', baseUrl: config.baseUrl, settings: 'TTS', timeoutMs: config.idleTimeoutMs };
  }

  async synthesize(text: string, options: SynthesisOptions = {}): Promise<SynthesizedSpeech> {
    const { model, voice, format, speed, sampleRate, idleTimeoutMs } = this.config;
    const request = new EngineRequest(options.signal, idleTimeoutMs);
    try {
      request.arm();
      const response = await this.client.audio.speech.create(
        { model, voice: options.voice ?? voice, input: text, response_format: format, ...(speed === undefined ? {} : { speed }) },
        { signal: request.signal },
      );
      const type = response.headers.get('content-type') ?? '';
      if (NOT_AUDIO.test(type)) throw new UnreadableAnswer(`${type.split(';')[0]}, not audio`);
      if (!response.body) throw new UnreadableAnswer('no body');
      const bytes = timedBytes(response.body, request);
      if (format === 'pcm') return { sampleRate, chunks: this.chunks(bytes, request) };
      const { header, start } = await readWavStart(bytes);
      return { sampleRate: header.sampleRate, chunks: this.chunks(prepend(start, bytes), request, header.dataBytes) };
    } catch (error) {
      request.end();
      throw engineFailure(error, request, this.identity);
    }
  }

  /** The samples of the body, ending quietly when the caller aborts and ending the request when left early. */
  private async *chunks(bytes: AsyncIterable<Uint8Array>, request: EngineRequest, limit?: number): AsyncGenerator<Int16Array, void, undefined> {
    try {
      yield* pcmChunks(bytes, limit);
    } catch (error) {
      if (request.cancelled) return;
      throw engineFailure(error, request, this.identity);
    } finally {
      request.end();
    }
  }
}

/**
 * The body's pieces, with the request's deadline running only while the next one is awaited.
 * Each wait also ends when the request does: a body the fetch already received whole is not
 * always errored by the abort, and its next read would wait for ever.
 */
async function* timedBytes(body: AsyncIterable<Uint8Array>, request: EngineRequest): AsyncGenerator<Uint8Array, void, undefined> {
  const pieces = body[Symbol.asyncIterator]();
  try {
    for (;;) {
      request.arm();
      const next = await untilAborted(pieces.next(), request.signal);
      request.disarm();
      if (next.done) return;
      yield next.value;
    }
  } finally {
    void Promise.resolve(pieces.return?.()).catch(() => undefined);
  }
}

/** `pending`, or the signal's reason as soon as it aborts. */
function untilAborted<T>(pending: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const stop = () => reject(signal.reason as Error);
    signal.addEventListener('abort', stop, { once: true });
    pending.then(
      (value) => (signal.removeEventListener('abort', stop), resolve(value)),
      (error: unknown) => (signal.removeEventListener('abort', stop), reject(error as Error)),
    );
  });
}

/** Reads a WAV answer until its data chunk begins: its header, and the first samples' bytes read with it. */
async function readWavStart(bytes: AsyncGenerator<Uint8Array, void, undefined>) {
  let head: Uint8Array = new Uint8Array(0);
  for (;;) {
    const next = await bytes.next();
    if (next.done) throw new WavFormatError('it ends before its data chunk');
    head = concat(head, next.value);
    const header = readWavHeader(head);
    if (header) return { header, start: head.subarray(header.dataOffset) };
    if (head.length > MAX_WAV_HEADER_BYTES) throw new WavFormatError(`no data chunk in its first ${MAX_WAV_HEADER_BYTES} bytes`);
  }
}

async function* prepend(first: Uint8Array, rest: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array, void, undefined> {
  if (first.length > 0) yield first;
  yield* rest;
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const joined = new Uint8Array(a.length + b.length);
  joined.set(a);
  joined.set(b, a.length);
  return joined;
}
