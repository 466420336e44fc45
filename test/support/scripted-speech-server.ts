import type { IncomingMessage, ServerResponse } from 'http';
import { ScriptedHttpServer } from './scripted-http-server';

/** A request to `/v1/audio/speech`, as the scripted server received it. */
export interface SpeechRequest {
  model: string;
  voice: string;
  input: string;
  response_format?: string;
  speed?: number;
  headers: IncomingMessage['headers'];
}

/**
 * What a broken speech server does: answer HTTP 500 or 404, never answer (`hang`), send a WAV
 * header then nothing more (`stall`), answer 200 with JSON (`json`), or with bytes that are not
 * a WAV when one was asked (`garbage`).
 */
export type SpeechFault = 'http500' | 'http404' | 'hang' | 'stall' | 'json' | 'garbage';

/** The audio of one answer and how it is sent. */
export interface SpokenReply {
  samples: Int16Array;
  /** The rate a WAV answer's header says (`pcm` answers have none). */
  sampleRate?: number;
  /** Bytes per write, odd sizes included (a sample split between two writes); all at once when unset. */
  pieceBytes?: number;
  /** Pause between writes. */
  intervalMs?: number;
  /** Wait before the answer starts. */
  delayMs?: number;
  /** The data size a WAV answer's header declares: a streaming server writes 0 or 0xFFFFFFFF. */
  wavDataSize?: number;
}

export type SpeechReply = SpokenReply | { fault: SpeechFault };

/** What happened to one answer: what was written, and whether the client hung up first. */
export interface SpeechStream {
  writes: { bytes: number; at: number }[];
  closedEarlyAt?: number;
  finished: boolean;
}

/** `seconds` of a sine at `frequency`, half of full scale: a recognisable test signal. */
export function sine(frequency: number, seconds: number, sampleRate: number): Int16Array {
  return Int16Array.from({ length: Math.round(seconds * sampleRate) }, (_, i) => Math.round(16000 * Math.sin((2 * Math.PI * frequency * i) / sampleRate)));
}

/** A 16-bit mono WAV header declaring `dataSize` bytes of samples at `sampleRate`. */
export function wavHeader(sampleRate: number, dataSize: number): Buffer {
  const header = Buffer.alloc(44);
  header.write('RIFF', 0);
  header.writeUInt32LE(dataSize >= 0xffffffff - 36 ? 0xffffffff : 36 + dataSize, 4);
  header.write('WAVEfmt ', 8);
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20);
  header.writeUInt16LE(1, 22);
  header.writeUInt32LE(sampleRate, 24);
  header.writeUInt32LE(sampleRate * 2, 28);
  header.writeUInt16LE(2, 32);
  header.writeUInt16LE(16, 34);
  header.write('data', 36);
  header.writeUInt32LE(dataSize, 40);
  return header;
}

/**
 * An OpenAI-compatible speech server for tests, on 127.0.0.1 and a free port: each request gets
 * the next scripted audio, as raw PCM or as a WAV as it asked, in pieces and at the pace
 * scripted; it records requests, what it wrote when, and whether the client hung up first.
 * Without a script entry it speaks 0.2 s of a 440 Hz sine at 24 kHz.
 */
export class ScriptedSpeechServer extends ScriptedHttpServer<SpeechReply> {
  readonly requests: SpeechRequest[] = [];
  readonly streams: SpeechStream[] = [];

  static start(): Promise<ScriptedSpeechServer> {
    return new ScriptedSpeechServer().listen();
  }

  reset(): void {
    this.script.length = 0;
    this.requests.length = 0;
    this.streams.length = 0;
  }

  protected async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    let body = '';
    for await (const chunk of request) body += chunk;
    if (request.method !== 'POST' || !request.url?.endsWith('/audio/speech')) {
      response.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'not found' } }));
      return;
    }
    const speech = { ...JSON.parse(body), headers: request.headers } as SpeechRequest;
    this.requests.push(speech);
    const stream: SpeechStream = { writes: [], finished: false };
    this.streams.push(stream);
    response.once('close', () => {
      if (!stream.finished) stream.closedEarlyAt = performance.now();
    });
    const reply = this.script.shift() ?? { samples: sine(440, 0.2, 24000) };
    const wav = speech.response_format === 'wav';
    if ('fault' in reply) return this.fault(reply.fault, response, wav);
    if (reply.delayMs) await new Promise((resolve) => setTimeout(resolve, reply.delayMs));
    const samples = Buffer.from(reply.samples.buffer, reply.samples.byteOffset, reply.samples.byteLength);
    const audio = wav ? Buffer.concat([wavHeader(reply.sampleRate ?? 24000, reply.wavDataSize ?? samples.length), samples]) : samples;
    response.writeHead(200, { 'content-type': wav ? 'audio/wav' : 'audio/pcm' });
    const piece = reply.pieceBytes ?? audio.length;
    for (let at = 0; at < audio.length; at += piece) {
      if (response.destroyed) return;
      if (at > 0 && reply.intervalMs) await new Promise((resolve) => setTimeout(resolve, reply.intervalMs));
      if (response.destroyed) return;
      const part = audio.subarray(at, at + piece);
      response.write(part);
      stream.writes.push({ bytes: part.length, at: performance.now() });
    }
    stream.finished = true;
    response.end();
  }

  private fault(fault: SpeechFault, response: ServerResponse, wav: boolean): void {
    const json = (status: number, body: unknown) => response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (fault === 'hang') return;
    if (fault === 'http500') return void json(500, { error: { message: 'engine crashed, key sk-scripted-secret' } });
    if (fault === 'http404') return void json(404, { error: { message: 'no such voice' } });
    if (fault === 'json') return void json(200, { error: { message: 'unknown voice' } });
    response.writeHead(200, { 'content-type': wav ? 'audio/wav' : 'audio/pcm' });
    if (fault === 'stall') return void response.write(wav ? wavHeader(24000, 0xffffffff) : Buffer.alloc(480));
    response.end('this is not a RIFF file at all');
  }
}
