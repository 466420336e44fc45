import { randomUUID } from 'crypto';
import { readFileSync } from 'fs';
import { createServer, IncomingMessage } from 'http';
import { WebSocket, WebSocketServer } from 'ws';

/* eslint-disable @typescript-eslint/no-require-imports -- the gateway's own building blocks, from its build, as bench/suites/audio.ts takes them */
const { OpusDecoder } = require('../../../dist/assistant/audio/opus-decoder') as typeof import('../../src/assistant/audio/opus-decoder');
const { OpusEncoder } = require('../../../dist/assistant/audio/opus-encoder') as typeof import('../../src/assistant/audio/opus-encoder');
const { PcmFramer } = require('../../../dist/assistant/audio/pcm-framer') as typeof import('../../src/assistant/audio/pcm-framer');
const { Resampler } = require('../../../dist/assistant/audio/resampler') as typeof import('../../src/assistant/audio/resampler');
const { VoiceActivityDetector } =
  require('../../../dist/assistant/audio/voice-activity-detector') as typeof import('../../src/assistant/audio/voice-activity-detector');
/* eslint-enable @typescript-eslint/no-require-imports */

/**
 * The baseline of the xiaozhi figures (bench/suites/xiaozhi.ts): the least a server must do to hold
 * a xiaozhi device's conversation, with the gateway's own audio blocks and nothing else. It answers
 * the configuration request with its WebSocket URL; checks the bearer token and `Device-Id` at the
 * upgrade; answers the hello; decodes the device's Opus and runs Silero VAD on it (the gateway's
 * default settings) from `listen start` until the VAD ends the utterance; then, with no
 * recognizer, model or synthesizer, says the answer it was given (`BENCH_XIAOZHI_ANSWER`, a JSON
 * file: the transcript and each sentence's samples): `stt`, `llm`, `tts start`, each sentence
 * resampled to 24 kHz, framed and encoded one frame at a time as it is paced out (the first three
 * frames at once, then one per 60 ms, as the gateway's paced sender does), `sentence_start` before
 * its first frame, `tts stop` after the last. No framework, validation, session, history, engine
 * requests, metrics or limits.
 */
const TOKEN = process.env.BENCH_TOKEN ?? '';
const port = Number(process.env.PORT);
const answer = JSON.parse(readFileSync(process.env.BENCH_XIAOZHI_ANSWER ?? '', 'utf8')) as {
  transcript: string;
  sentences: { text: string; sampleRate: number; samples: string }[];
};
const sentences = answer.sentences.map((sentence) => {
  const bytes = Buffer.from(sentence.samples, 'base64');
  return { text: sentence.text, sampleRate: sentence.sampleRate, samples: new Int16Array(bytes.buffer, bytes.byteOffset, bytes.length / 2) };
});

const VAD = { startThreshold: 0.5, endThreshold: 0.35, minSpeechMs: 250, silenceMs: 700 };
const UPLINK_RATE = 16_000;
const DOWNLINK_RATE = 24_000;
const FRAME_MS = 60;
const LEAD_FRAMES = 3;

/** One device's conversation. */
class Conversation {
  private readonly sessionId = randomUUID();
  private listening = false;
  private heard = false;
  private decoder?: InstanceType<typeof OpusDecoder>;
  private detector?: InstanceType<typeof VoiceActivityDetector>;
  private encoder?: InstanceType<typeof OpusEncoder>;
  private resampler?: Awaited<ReturnType<typeof Resampler.open>>;
  private readonly framer = new PcmFramer((DOWNLINK_RATE * FRAME_MS) / 1000);
  private timer?: NodeJS.Timeout;
  private closed = false;

  constructor(private readonly socket: WebSocket) {
    socket.on('message', (data: Buffer, binary: boolean) => (binary ? this.audio(data) : this.text(JSON.parse(data.toString()))));
    socket.on('close', () => this.close());
  }

  private send(message: object): void {
    this.socket.send(JSON.stringify({ session_id: this.sessionId, ...message }));
  }

  private text(message: { type?: string; state?: string }): void {
    if (message.type === 'hello')
      this.send({ type: 'hello', transport: 'websocket', audio_params: { format: 'opus', sample_rate: DOWNLINK_RATE, channels: 1, frame_duration: FRAME_MS } });
    else if (message.type === 'listen' && message.state === 'start') {
      this.listening = true;
      this.heard = false;
      this.detector?.reset();
    }
  }

  private audio(packet: Buffer): void {
    if (!this.listening) return;
    this.decoder ??= new OpusDecoder(UPLINK_RATE);
    this.detector ??= new VoiceActivityDetector(VAD);
    const samples = this.decoder.decode(packet).slice();
    void this.detector.push(samples).then((events) => {
      if (!this.listening || this.closed) return;
      for (const event of events) {
        if (event.type === 'speech-start') this.heard = true;
        else if (this.heard) {
          this.listening = false;
          void this.speak();
          return;
        }
      }
    });
  }

  /** The answer, paced: a frame goes out once the device holds fewer than three it has not played; each is resampled and encoded as it goes. */
  private async speak(): Promise<void> {
    this.send({ type: 'stt', text: answer.transcript });
    this.send({ type: 'llm', emotion: 'neutral', text: '😶' });
    this.send({ type: 'tts', state: 'start' });
    this.encoder ??= new OpusEncoder({ sampleRate: DOWNLINK_RATE, frameDurationMs: FRAME_MS });
    const rate = sentences[0].sampleRate;
    if (this.resampler?.fromRate !== rate) {
      this.resampler?.free();
      this.resampler = await Resampler.open(rate, DOWNLINK_RATE);
    }
    if (this.closed) return;
    const frames = this.frames(this.resampler);
    let next = frames.next();
    let playedUntil = -Infinity;
    const pump = () => {
      if (this.closed) return;
      const now = performance.now();
      while (!next.done && Math.max(0, playedUntil - now) + FRAME_MS <= LEAD_FRAMES * FRAME_MS) {
        playedUntil = Math.max(playedUntil, now) + FRAME_MS;
        if (next.value.sentence) this.send({ type: 'tts', state: 'sentence_start', text: next.value.sentence });
        this.socket.send(this.encoder!.encode(next.value.pcm));
        next = frames.next();
      }
      if (!next.done) this.timer = setTimeout(pump, Math.max(1, Math.ceil(playedUntil - LEAD_FRAMES * FRAME_MS + FRAME_MS - now)));
      else this.send({ type: 'tts', state: 'stop' });
    };
    pump();
  }

  /** The answer's 60 ms frames at 24 kHz, resampled 0.1 s at a time as they are asked for; each sentence's first carries its text, its last is padded. */
  private *frames(resampler: Awaited<ReturnType<typeof Resampler.open>>): Generator<{ pcm: Int16Array; sentence?: string }> {
    for (const sentence of sentences) {
      let first: string | undefined = sentence.text;
      const piece = Math.round(sentence.sampleRate / 10);
      const pieces = [];
      for (let offset = 0; offset < sentence.samples.length; offset += piece)
        pieces.push(() => resampler.push(sentence.samples.subarray(offset, offset + piece)));
      pieces.push(() => resampler.flush());
      for (const resample of pieces)
        for (const pcm of this.framer.push(resample())) {
          yield { pcm, sentence: first };
          first = undefined;
        }
      const last = this.framer.flush();
      if (last) yield { pcm: last, sentence: first };
    }
  }

  private close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.decoder?.free();
    this.encoder?.free();
    this.resampler?.free();
  }
}

const http = createServer((request, response) => {
  if (request.method === 'POST' && request.url?.startsWith('/xiaozhi/ota')) {
    request.resume();
    request.on('end', () =>
      response.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          websocket: { url: `ws://${request.headers.host}/xiaozhi/v1/`, token: TOKEN },
          server_time: { timestamp: Date.now(), timezone_offset: 0 },
        }),
      ),
    );
  } else response.writeHead(404).end();
});
const sockets = new WebSocketServer({
  noServer: true,
  perMessageDeflate: false,
});
http.on('upgrade', (request: IncomingMessage, socket, head) => {
  if (!request.url?.startsWith('/xiaozhi/v1') || request.headers.authorization !== `Bearer ${TOKEN}` || !request.headers['device-id']) {
    socket.end('HTTP/1.1 401 Unauthorized\r\n\r\n');
    return;
  }
  sockets.handleUpgrade(request, socket, head, (client) => new Conversation(client));
});
http.listen(port, '127.0.0.1');

process.on('SIGTERM', () => {
  sockets.clients.forEach((client) => client.terminate());
  http.close(() => process.exit(0));
});
