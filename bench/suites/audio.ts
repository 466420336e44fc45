import { speak } from '../../test/support/espeak';
import { median, round } from '../support/stats';

/* eslint-disable @typescript-eslint/no-require-imports -- the gateway's build, as the other suites run it (`npm run bench` builds it first) */
const { OpusDecoder } = require('../../../dist/assistant/audio/opus-decoder') as typeof import('../../src/assistant/audio/opus-decoder');
const { OpusEncoder } = require('../../../dist/assistant/audio/opus-encoder') as typeof import('../../src/assistant/audio/opus-encoder');
const { PcmFramer } = require('../../../dist/assistant/audio/pcm-framer') as typeof import('../../src/assistant/audio/pcm-framer');
const { Resampler } = require('../../../dist/assistant/audio/resampler') as typeof import('../../src/assistant/audio/resampler');
const { VoiceActivityDetector } =
  require('../../../dist/assistant/audio/voice-activity-detector') as typeof import('../../src/assistant/audio/voice-activity-detector');
/* eslint-enable @typescript-eslint/no-require-imports */

export interface AudioBenchOptions {
  /** Measured rounds (after one warm-up); the median is reported. */
  rounds: number;
  /** Times the spoken sentence is repeated in one round. */
  repeats: number;
}

const UPLINK_RATE = 16_000;
const DOWNLINK_RATE = 24_000;
const FRAME_MS = 60;
const VAD = { startThreshold: 0.5, endThreshold: 0.35, minSpeechMs: 250, silenceMs: 700 };

function cpuMicros(start: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(start);
  return used.user + used.system;
}

async function resampled(samples: Int16Array, from: number, to: number): Promise<Int16Array> {
  const resampler = await Resampler.open(from, to);
  const out = new Int16Array([...resampler.push(samples), ...resampler.flush()]);
  resampler.free();
  return out;
}

/** One spoken exchange of a device: what its session decodes and listens to, and what it says back. */
export interface ExchangeAudio {
  /** The device's packets the session decodes and runs through the VAD (up to where the VAD ends the utterance). */
  packets: Uint8Array[];
  /** The answer's sentences, as the synthesizer sends them, each resampled, framed (its last frame padded) and encoded. */
  sentences: { samples: Int16Array; sampleRate: number }[];
}

/** What the building blocks alone spend on one {@link ExchangeAudio}, CPU microseconds (median of the rounds). */
export interface ExchangeCost {
  uplinkMicros: number;
  downlinkMicros: number;
  uplinkSeconds: number;
  downlinkSeconds: number;
}

/** The index of the packet at which the VAD (the gateway's default settings) ends the utterance, or -1 if it does not. */
export async function speechEndPacket(packets: Uint8Array[]): Promise<number> {
  const detector = new VoiceActivityDetector(VAD);
  const decoder = new OpusDecoder(UPLINK_RATE);
  let heard = false;
  try {
    for (let index = 0; index < packets.length; index += 1) {
      for (const event of await detector.push(decoder.decode(packets[index]).slice())) {
        if (event.type === 'speech-start') heard = true;
        else if (heard) return index;
      }
    }
    return -1;
  } finally {
    decoder.free();
  }
}

/**
 * The baseline of a device session's CPU (bench/suites/xiaozhi.ts), the same blocks as
 * {@link benchAudio} doing exactly one exchange's work, `repeats` exchanges a round: the uplink
 * packets decoded and run through Silero VAD (the detector reset between utterances, as a
 * session does), the answer's sentences resampled to 24 kHz in 0.1 s pieces, framed and encoded,
 * each sentence ending on a padded frame. One warm-up round, then the median of `rounds`.
 */
export async function measureExchangeBaseline(audio: ExchangeAudio, rounds: number, repeats: number): Promise<ExchangeCost> {
  const uplink: number[] = [];
  const downlink: number[] = [];
  for (let round = 0; round <= rounds; round += 1) {
    const detector = new VoiceActivityDetector(VAD);
    const decoder = new OpusDecoder(UPLINK_RATE);
    let start = process.cpuUsage();
    for (let repeat = 0; repeat < repeats; repeat += 1) {
      detector.reset();
      for (const packet of audio.packets) await detector.push(decoder.decode(packet).slice());
    }
    const uplinkMicros = cpuMicros(start);
    decoder.free();

    start = process.cpuUsage();
    let resampler: Awaited<ReturnType<typeof Resampler.open>> | undefined;
    const framer = new PcmFramer((DOWNLINK_RATE * FRAME_MS) / 1000);
    const encoder = new OpusEncoder({ sampleRate: DOWNLINK_RATE, frameDurationMs: FRAME_MS });
    for (let repeat = 0; repeat < repeats; repeat += 1) {
      for (const sentence of audio.sentences) {
        if (resampler?.fromRate !== sentence.sampleRate) {
          resampler?.free();
          resampler = await Resampler.open(sentence.sampleRate, DOWNLINK_RATE);
        }
        const piece = Math.round(sentence.sampleRate / 10);
        for (let offset = 0; offset < sentence.samples.length; offset += piece)
          for (const frame of framer.push(resampler.push(sentence.samples.subarray(offset, offset + piece)))) encoder.encode(frame);
        for (const frame of framer.push(resampler.flush())) encoder.encode(frame);
        const last = framer.flush();
        if (last) encoder.encode(last);
      }
    }
    const downlinkMicros = cpuMicros(start);
    resampler?.free();
    encoder.free();

    if (round === 0) continue;
    uplink.push(uplinkMicros / repeats);
    downlink.push(downlinkMicros / repeats);
  }
  return {
    uplinkMicros: median(uplink),
    downlinkMicros: median(downlink),
    uplinkSeconds: (audio.packets.length * FRAME_MS) / 1000,
    downlinkSeconds: audio.sentences.reduce((sum, sentence) => sum + sentence.samples.length / sentence.sampleRate, 0),
  };
}

/**
 * What a voice device's audio costs with the chosen building blocks, per second of audio: the
 * uplink (16 kHz Opus packets decoded and run through Silero VAD) and the downlink (speech
 * synthesized at 22.05 kHz resampled to 24 kHz, cut to 60 ms frames, encoded). The baseline a
 * device session is compared against: the session's own CPU should stay within 1.3x of it.
 */
export async function benchAudio(options: AudioBenchOptions): Promise<void> {
  const spoken = await speak('Turn on the kitchen light, then tell me the weather in Berlin tomorrow morning.');
  const uplinkSpeech = await resampled(spoken.samples, spoken.sampleRate, UPLINK_RATE);
  const uplinkFramer = new PcmFramer((UPLINK_RATE * FRAME_MS) / 1000);
  const uplinkEncoder = new OpusEncoder({ sampleRate: UPLINK_RATE, frameDurationMs: FRAME_MS });
  const packets = [...uplinkFramer.push(uplinkSpeech), uplinkFramer.flush() as Int16Array].map((frame) => uplinkEncoder.encode(frame));
  uplinkEncoder.free();
  const uplinkSeconds = (packets.length * FRAME_MS * options.repeats) / 1000;
  const downlinkSeconds = (spoken.samples.length * options.repeats) / spoken.sampleRate;

  const uplink: number[] = [];
  const downlink: number[] = [];
  for (let round = 0; round <= options.rounds; round += 1) {
    const detector = new VoiceActivityDetector(VAD);
    const decoder = new OpusDecoder(UPLINK_RATE);
    let start = process.cpuUsage();
    for (let repeat = 0; repeat < options.repeats; repeat += 1) for (const packet of packets) await detector.push(decoder.decode(packet));
    const uplinkMicros = cpuMicros(start);
    decoder.free();

    start = process.cpuUsage();
    const resampler = await Resampler.open(spoken.sampleRate, DOWNLINK_RATE);
    const framer = new PcmFramer((DOWNLINK_RATE * FRAME_MS) / 1000);
    const encoder = new OpusEncoder({ sampleRate: DOWNLINK_RATE, frameDurationMs: FRAME_MS });
    for (let repeat = 0; repeat < options.repeats; repeat += 1)
      for (let offset = 0; offset < spoken.samples.length; offset += 2205)
        for (const frame of framer.push(resampler.push(spoken.samples.subarray(offset, offset + 2205)))) encoder.encode(frame);
    for (const frame of framer.push(resampler.flush())) encoder.encode(frame);
    const last = framer.flush();
    if (last) encoder.encode(last);
    const downlinkMicros = cpuMicros(start);
    resampler.free();
    encoder.free();

    if (round === 0) continue; // warm-up: the VAD model loads, WASM tiers up
    uplink.push(uplinkMicros / uplinkSeconds);
    downlink.push(downlinkMicros / downlinkSeconds);
  }
  const uplinkCost = median(uplink);
  const downlinkCost = median(downlink);
  process.stdout.write(
    `${JSON.stringify({
      figure: 'audio_two_way_cpu',
      audio: {
        uplink: `opus ${UPLINK_RATE} Hz mono ${FRAME_MS} ms`,
        downlink: `opus ${DOWNLINK_RATE} Hz mono ${FRAME_MS} ms from ${spoken.sampleRate} Hz speech`,
      },
      seconds: { uplink: round(uplinkSeconds, 1), downlink: round(downlinkSeconds, 1) },
      cpu_us_per_audio_s: {
        uplink_decode_vad: Math.round(uplinkCost),
        downlink_resample_encode: Math.round(downlinkCost),
        two_way: Math.round(uplinkCost + downlinkCost),
      },
      core_share_two_way: round((uplinkCost + downlinkCost) / 1e6, 4),
      target: { session_to_this: 1.3 },
    })}\n`,
  );
}
