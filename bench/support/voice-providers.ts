import type { IncomingMessage, ServerResponse } from 'http';
import { ScriptedHttpServer } from '../../test/support/scripted-http-server';
import { wavHeader } from '../../test/support/scripted-speech-server';
import { elapsedMs } from './stats';

/**
 * The speech servers of the voice figures, zero-delay: each answers as soon as it has read the
 * request, so the time between a device's end of speech and its first reply frame is the
 * gateway's (and the VAD's silence), not an engine's. Built on the tests' scripted server
 * (`ScriptedHttpServer`: 127.0.0.1, a free port, sockets destroyed at close), but lighter than
 * the tests' scripted recognizer and synthesizer: the bench process shares the machine with the
 * gateway, so the transcription server does not parse each multipart upload, and the speech
 * server answers each sentence with its own audio, looked up, not synthesized.
 */
abstract class TimedServer extends ScriptedHttpServer<never> {
  /** Milliseconds from each request's arrival to its answer's end, for the figure's note on the providers. */
  readonly answerMs: number[] = [];
  /** Requests refused because they were not what the bench sends (a wrong path, an unknown sentence). */
  readonly refused: string[] = [];

  reset(): void {
    this.answerMs.length = 0;
    this.refused.length = 0;
  }

  protected refuse(response: ServerResponse, status: number, why: string): void {
    this.refused.push(why.slice(0, 200));
    response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: why } }));
  }
}

/** `/v1/audio/transcriptions` that reads the upload and answers `text` at once. */
export class FixedTranscriptionServer extends TimedServer {
  /** Bytes of each upload, so the suite can check that audio (a WAV) was sent. */
  uploads = 0;
  uploadBytes = 0;

  private constructor(private readonly text: string) {
    super();
  }

  static start(text: string): Promise<FixedTranscriptionServer> {
    return new FixedTranscriptionServer(text).listen();
  }

  override reset(): void {
    super.reset();
    this.uploads = 0;
    this.uploadBytes = 0;
  }

  protected async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const start = process.hrtime.bigint();
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    if (request.method !== 'POST' || !request.url?.endsWith('/audio/transcriptions')) return this.refuse(response, 404, `${request.method} ${request.url}`);
    if (!String(request.headers['content-type']).startsWith('multipart/form-data') || body.indexOf('RIFF') < 0)
      return this.refuse(response, 400, 'the upload is not a multipart form with a WAV');
    this.uploads += 1;
    this.uploadBytes += body.length;
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ text: this.text }));
    this.answerMs.push(elapsedMs(start));
  }
}

/** Audio of one sentence: 16-bit mono samples and their rate. */
export interface SentenceAudio {
  samples: Int16Array;
  sampleRate: number;
}

/**
 * `/v1/audio/speech` answering each sentence with its audio as a WAV (the gateway is started
 * with `TTS_FORMAT=wav`, so the rate comes in the header), all at once; a sentence it was not
 * given is refused with HTTP 500 and noted, so a change in what the gateway asks shows.
 */
export class SentenceSpeechServer extends TimedServer {
  private constructor(private readonly sentences: Map<string, Buffer>) {
    super();
  }

  static start(sentences: Map<string, SentenceAudio>): Promise<SentenceSpeechServer> {
    const wavs = new Map<string, Buffer>();
    for (const [text, audio] of sentences) {
      const data = Buffer.from(audio.samples.buffer, audio.samples.byteOffset, audio.samples.byteLength);
      wavs.set(normalized(text), Buffer.concat([wavHeader(audio.sampleRate, data.length), data]));
    }
    return new SentenceSpeechServer(wavs).listen();
  }

  protected async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const start = process.hrtime.bigint();
    let body = '';
    for await (const chunk of request) body += chunk;
    if (request.method !== 'POST' || !request.url?.endsWith('/audio/speech')) return this.refuse(response, 404, `${request.method} ${request.url}`);
    const { input, response_format: format } = JSON.parse(body) as { input?: string; response_format?: string };
    if (format !== 'wav') return this.refuse(response, 400, `response_format ${format}: the bench answers wav`);
    const wav = this.sentences.get(normalized(input ?? ''));
    if (!wav) return this.refuse(response, 500, `no audio for the sentence ${JSON.stringify(input)}`);
    response.writeHead(200, { 'content-type': 'audio/wav' }).end(wav);
    this.answerMs.push(elapsedMs(start));
  }
}

const normalized = (text: string) => text.trim().replace(/\s+/g, ' ');
