/**
 * `node dist-bench/bench/audio-codec-candidates.js` (after `npm run build:bench`): the Opus bindings
 * issue 37 weighed, side by side in one run on the same speech, as a xiaozhi device sends it (16 kHz
 * mono, 60 ms frames): CPU per second of audio to encode it and to decode it again, median of five
 * interleaved rounds. One JSON line per candidate. A candidate that is not installed is reported
 * as such: only the chosen one is a dependency; `npm install --no-save <name>` brings the others
 * back to measure them (`@discordjs/opus` builds libopus from source when its prebuilt binary
 * cannot be downloaded).
 */
import { create, ConverterType } from '@alexanderolsen/libsamplerate-js';
import { speak } from '../test/support/espeak';
import { median, ratio, round } from './support/stats';

const SAMPLE_RATE = 16_000;
const FRAME_SAMPLES = (SAMPLE_RATE * 60) / 1000;
const BITRATE = 24_000;
const ROUNDS = 5;
const REPEATS = 4;

interface Codec {
  encode(pcm: Int16Array): Uint8Array;
  decode(packet: Uint8Array): unknown;
}

interface Candidate {
  name: string;
  kind: 'native' | 'wasm';
  open(): Codec;
}

function bytesOf(pcm: Int16Array): Buffer {
  return Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength);
}

/* eslint-disable @typescript-eslint/no-require-imports -- the candidates are optional: loaded if installed */
function evanOpus(kind: 'native' | 'wasm'): Candidate {
  return {
    name: '@evan/opus',
    kind,
    open() {
      const path = require.resolve('@evan/opus');
      delete require.cache[path];
      if (kind === 'wasm') process.env.OPUS_FORCE_WASM = '1';
      const { Encoder, Decoder } = require(path);
      delete process.env.OPUS_FORCE_WASM;
      const encoder = new Encoder({ channels: 1, sample_rate: SAMPLE_RATE, application: 'voip' });
      encoder.bitrate = BITRATE;
      const decoder = new Decoder({ channels: 1, sample_rate: SAMPLE_RATE });
      return { encode: (pcm) => encoder.encode(pcm), decode: (packet) => decoder.decode(packet) };
    },
  };
}

const CANDIDATES: Candidate[] = [
  {
    name: 'opusscript',
    kind: 'wasm',
    open() {
      const OpusScript = require('opusscript');
      const encoder = new OpusScript(SAMPLE_RATE, 1, OpusScript.Application.VOIP);
      encoder.setBitrate(BITRATE);
      const decoder = new OpusScript(SAMPLE_RATE, 1, OpusScript.Application.VOIP);
      return { encode: (pcm) => encoder.encode(bytesOf(pcm), FRAME_SAMPLES), decode: (packet) => decoder.decode(Buffer.from(packet)) };
    },
  },
  evanOpus('native'),
  evanOpus('wasm'),
  {
    name: '@discordjs/opus',
    kind: 'native',
    open() {
      const { OpusEncoder } = require('@discordjs/opus');
      const encoder = new OpusEncoder(SAMPLE_RATE, 1);
      encoder.setBitrate(BITRATE);
      const decoder = new OpusEncoder(SAMPLE_RATE, 1);
      return { encode: (pcm) => encoder.encode(bytesOf(pcm)), decode: (packet) => decoder.decode(Buffer.from(packet)) };
    },
  },
];
/* eslint-enable @typescript-eslint/no-require-imports */

async function speechAt16k(): Promise<Int16Array> {
  const spoken = await speak('Turn on the kitchen light, then tell me the weather in Berlin tomorrow morning and set a timer for ten minutes.');
  const resampler = await create(1, spoken.sampleRate, SAMPLE_RATE, { converterType: ConverterType.SRC_SINC_MEDIUM_QUALITY });
  const floats = resampler.simple(Float32Array.from(spoken.samples, (sample) => sample / 32768));
  resampler.destroy();
  return Int16Array.from(floats, (value) => Math.max(-32768, Math.min(32767, Math.round(value * 32768))));
}

function cpuMicros(work: () => void): number {
  const start = process.cpuUsage();
  work();
  const used = process.cpuUsage(start);
  return used.user + used.system;
}

async function main(): Promise<void> {
  const speech = await speechAt16k();
  const frames: Int16Array[] = [];
  for (let offset = 0; offset + FRAME_SAMPLES <= speech.length; offset += FRAME_SAMPLES) frames.push(speech.slice(offset, offset + FRAME_SAMPLES));
  const audioSeconds = (frames.length * FRAME_SAMPLES * REPEATS) / SAMPLE_RATE;

  const installed: { candidate: Candidate; codec: Codec; encode: number[]; decode: number[] }[] = [];
  for (const candidate of CANDIDATES) {
    try {
      installed.push({ candidate, codec: candidate.open(), encode: [], decode: [] });
    } catch (error) {
      process.stdout.write(
        `${JSON.stringify({ figure: 'opus_binding_candidate', name: candidate.name, kind: candidate.kind, installed: false, error: (error as Error).message.split('\n')[0] })}\n`,
      );
    }
  }
  for (let round = 0; round <= ROUNDS; round += 1) {
    for (const entry of installed) {
      let packets: Uint8Array[] = [];
      const encodeMicros = cpuMicros(() => {
        packets = [];
        for (let repeat = 0; repeat < REPEATS; repeat += 1) for (const frame of frames) packets.push(entry.codec.encode(frame));
      });
      const decodeMicros = cpuMicros(() => {
        for (const packet of packets) entry.codec.decode(packet);
      });
      if (round === 0) continue; // warm-up: WASM tiers up, caches fill
      entry.encode.push(encodeMicros / audioSeconds);
      entry.decode.push(decodeMicros / audioSeconds);
    }
  }
  const totals = installed.map((entry) => median(entry.encode) + median(entry.decode));
  const fastest = Math.min(...totals);
  installed.forEach((entry, index) =>
    process.stdout.write(
      `${JSON.stringify({
        figure: 'opus_binding_candidate',
        name: entry.candidate.name,
        kind: entry.candidate.kind,
        installed: true,
        audio: { sample_rate: SAMPLE_RATE, frame_ms: 60, bitrate: BITRATE, seconds: round(audioSeconds, 1) },
        cpu_us_per_audio_s: { encode: Math.round(median(entry.encode)), decode: Math.round(median(entry.decode)), both: Math.round(totals[index]) },
        ratio_to_fastest: ratio(totals[index], fastest),
      })}\n`,
    ),
  );
}

main().catch((error: Error) => {
  process.stderr.write(`audio codec candidates failed: ${error.stack ?? error}\n`);
  process.exit(1);
});
