import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'fs';
import { loadavg, tmpdir } from 'os';
import { join } from 'path';
import { speak } from '../../test/support/espeak';
import { ChatRequest, ScriptedLlm, ScriptedReply } from '../../test/support/scripted-llm';
import { speechAt16k, uplinkPackets } from '../../test/support/speech-packets';
import { procCpuMicros } from '../support/bench-redis';
import { withSwarms } from '../support/device-swarm';
import { BENCH_BUILD, ServerProcess, ServerSpec } from '../support/processes';
import { BENCH_TOKEN, gatewayServer } from '../support/servers';
import { emit, percentile, ratio, round } from '../support/stats';
import { FixedTranscriptionServer, SentenceAudio, SentenceSpeechServer } from '../support/voice-providers';
import { Exchange, withXiaozhiSwarm, XiaozhiSwarm } from '../support/xiaozhi-swarm';
import { ExchangeCost, measureExchangeBaseline, speechEndPacket } from './audio';
import { withServer } from './tool-calls';

export interface XiaozhiOptions {
  /** The one-device run: exchanges one after the other, for the latency at rest (0: none). */
  single: { rounds: number };
  /**
   * Devices in continuous conversation at once, each count on a gateway of its own, upward;
   * stepping stops one step after the share of late reply frames first crosses `lateShare`.
   */
  scale: { steps: number[]; rounds: number; lateShare: number; latencyDevices: number };
  /** Idle devices (hello done, nothing said) on one gateway, against as many idle LLM-gateway devices. */
  idle: { devices: number };
  /** Exchanges of untimed warm-up on each gateway before it is measured (JIT, the VAD model's load). */
  warmup: { devices: number; rounds: number };
  /** Rounds (after one warm-up) and exchanges per round of the libopus + VAD baseline. */
  baseline: { rounds: number; repeats: number };
  /**
   * The same devices over MQTT + UDP (part `mqtt`): exchanges at each of `devices` (beside the
   * WebSocket gateway's at the same count, measured here if the other parts did not), and
   * `idleDevices` idle on MQTT (connected, no audio channel).
   */
  mqtt?: { devices: number[]; rounds: number; idleDevices: number };
  /** Pauses (see `idleWindowMs`, `settleMs`), short in smoke mode. */
  pauses?: { idleWindowMs: number; settleMs: number; idleSettleMs: number };
}

/** What the device says, and the model's answer: two sentences, so the answer's speech is streamed sentence by sentence. */
const UTTERANCE = 'Turn on the kitchen light, please.';
const ANSWER_SENTENCES = ['The kitchen light is on now.', 'It will be sunny in Berlin tomorrow morning, with a light wind.'];
const ANSWER = ANSWER_SENTENCES.join(' ');

const FRAME_MS = 60;
/** The gateway's default (`VAD_SILENCE_MS`): the silence that ends an utterance, waited for by design. */
const VAD_SILENCE_MS = 700;
/** Frames the gateway's paced sender lets a device hold ahead (`PacedSender`'s default lead): the first three go at once. */
const LEAD_FRAMES = 3;
/** Silence before the speech in each utterance, and after it in the packets (then the last packet again, until `tts start`). */
const BEFORE_MS = 300;
const AFTER_MS = 2000;
/** Most packets an utterance sends unanswered (its 0.3 s + speech + 15 s) before the exchange is given up. */
const MAX_UNANSWERED_MS = 15_000;
/** Longest one exchange may take before the run gives up on it, on top of the spread. */
const EXCHANGE_BOUND_MS = 45_000;
const CONNECT_TIMEOUT_MS = 120_000;
const CONNECT_CONCURRENCY = 50;
/**
 * The window over which a server's CPU with devices connected and silent is read, and how long a
 * started or emptied server settles (timers, sockets closing) before its memory is read; shorter
 * in smoke mode.
 */
let idleWindowMs = 4000;
let settleMs = 1000;
/**
 * How long idle devices settle before the memory they cost is read: long enough for the memory of
 * thousands of configuration requests (HTTP parsing, Express; given back to the system within
 * seconds, not kept per device) to be returned.
 */
let idleSettleMs = 20_000;
/** xiaozhi-esp32-server as its users report it: about 30 devices on 4 cores; the issue aims for ten times that per core. */
const PEER_DEVICES_PER_CORE = 30 / 4;
const TARGET_DEVICES_PER_CORE = 10 * PEER_DEVICES_PER_CORE;
const TARGET_CPU_RATIO = 1.3;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** What every run talks with, prepared once. */
interface Conversation {
  packets: Uint8Array[];
  lastSpeechPacket: number;
  /** Packets the gateway decodes per exchange: up to the one at which its VAD ends the utterance. */
  heardPackets: number;
  sentences: Map<string, SentenceAudio>;
  /** Reply frames per exchange: each sentence at 24 kHz in 60 ms frames, its last padded. */
  expectedFrames: number;
}

/** The last sample of `speech` at least 1% of its peak: where the voice ends, past espeak-ng's trailing quiet. */
function lastVoicedSample(speech: Int16Array): number {
  let peak = 0;
  for (const sample of speech) peak = Math.max(peak, Math.abs(sample));
  for (let index = speech.length - 1; index >= 0; index -= 1) if (Math.abs(speech[index]) >= peak / 100) return index;
  return speech.length - 1;
}

async function prepare(): Promise<Conversation> {
  const speech = await speechAt16k(UTTERANCE);
  const { packets } = uplinkPackets(speech, BEFORE_MS, AFTER_MS);
  const samplesPerPacket = (16_000 * FRAME_MS) / 1000;
  const lastSpeechPacket = Math.floor((Math.round((BEFORE_MS * 16_000) / 1000) + lastVoicedSample(speech)) / samplesPerPacket);
  const end = await speechEndPacket(packets);
  if (end < 0 || end <= lastSpeechPacket)
    throw new Error(`xiaozhi: the VAD does not end the utterance within its ${AFTER_MS} ms of silence (end packet ${end})`);
  const sentences = new Map<string, SentenceAudio>();
  let expectedFrames = 0;
  for (const text of ANSWER_SENTENCES) {
    const audio = await speak(text);
    sentences.set(text, audio);
    expectedFrames += Math.ceil(Math.round((audio.samples.length * 24_000) / audio.sampleRate) / ((24_000 * FRAME_MS) / 1000));
  }
  return { packets, lastSpeechPacket, heardPackets: end + 1, sentences, expectedFrames };
}

/** The model: the same answer to every request, whatever the history holds. */
const model = (_request: ChatRequest): ScriptedReply => ({ text: ANSWER });

/** The zero-delay engines, in the bench process, shared by every gateway of the suite. */
interface Providers {
  llm: ScriptedLlm;
  stt: FixedTranscriptionServer;
  tts: SentenceSpeechServer;
}

/** `BENCH_CPU_PROF_DIR`: every server (gateway and bare) the suite starts writes a V8 CPU profile there when it stops, as in the fleet suite. */
function profiled(spec: ServerSpec): ServerSpec {
  const dir = process.env.BENCH_CPU_PROF_DIR;
  return dir ? { ...spec, args: ['--cpu-prof', `--cpu-prof-dir=${dir}`, ...spec.args] } : spec;
}

/** Settings that make the configuration answer send devices to the gateway's MQTT server (a free port; every bench device comes from 127.0.0.1). */
const mqttSettings = (maxConnections: number): Record<string, string> => ({
  XIAOZHI_TRANSPORT: 'mqtt',
  XIAOZHI_MQTT_PORT: '0',
  XIAOZHI_MQTT_HOST: '127.0.0.1',
  XIAOZHI_MQTT_MAX_CONNECTIONS: String(maxConnections),
  XIAOZHI_MQTT_MAX_CONNECTIONS_PER_ADDRESS: '0',
});

/** The gateway with its speech engines and model on the bench's scripted servers, devices getting the bench token (or, with `transport: 'mqtt'`, MQTT credentials) from the configuration answer. */
const voiceGateway =
  (providers: Providers, maxConnections: number, transport: Transport = 'websocket') =>
  (port: number) =>
    profiled({
      ...gatewayServer(port, {
        ...(transport === 'mqtt' ? mqttSettings(maxConnections) : {}),
        STT_BASE_URL: providers.stt.baseUrl,
        TTS_BASE_URL: providers.tts.baseUrl,
        TTS_FORMAT: 'wav',
        LLM_BASE_URL: providers.llm.baseUrl,
        LLM_MAX_RETRIES: '0',
        LLM_TIMEOUT: '30',
        LOCATION_PROVIDER_URL: 'off',
        XIAOZHI_DEVICE_TOKEN: BENCH_TOKEN,
        CLOUD_MAX_CONNECTIONS: String(maxConnections),
      }),
      preload: [join(BENCH_BUILD, 'support', 'loop-probe.js')],
    });

/** The baseline (bench/servers/bare-xiaozhi-server.ts): the same audio work and pacing, nothing else; its answer from `answerFile`. */
const bareServer = (answerFile: string) => (): ServerSpec =>
  profiled({
    name: 'bare xiaozhi',
    args: [join(BENCH_BUILD, 'servers', 'bare-xiaozhi-server.js')],
    env: { BENCH_TOKEN, BENCH_XIAOZHI_ANSWER: answerFile },
    preload: [join(BENCH_BUILD, 'support', 'loop-probe.js')],
  });

/** What the bare server says: the transcript and the answer's sentences, written for it to read. */
function writeAnswer(conversation: Conversation, dir: string): string {
  const file = join(dir, 'answer.json');
  const sentences = [...conversation.sentences].map(([text, audio]) => ({
    text,
    sampleRate: audio.sampleRate,
    samples: Buffer.from(audio.samples.buffer, audio.samples.byteOffset, audio.samples.byteLength).toString('base64'),
  }));
  writeFileSync(file, JSON.stringify({ transcript: UTTERANCE, sentences }));
  return file;
}

/** How the devices reach the gateway: a WebSocket, or MQTT for their messages and UDP for their audio. */
type Transport = 'websocket' | 'mqtt';

/** One server the devices talk to: the gateway (its engines the bench's scripted servers) or the bare baseline. */
interface Target {
  kind: 'gateway' | 'bare';
  transport: Transport;
  spec: (port: number) => ServerSpec;
  /** Queues `count` model answers (the gateway's); nothing for the bare server. */
  prepare(count: number): void;
  /** Forgets what the engines recorded. */
  reset(): void;
  /** Requests the engines refused: the gateway asked for something the bench did not script. */
  refused(): string[];
  answerMs(): { stt: number[]; tts: number[] };
}

function gatewayTarget(providers: Providers, maxConnections: number, transport: Transport = 'websocket'): Target {
  return {
    kind: 'gateway',
    transport,
    spec: voiceGateway(providers, maxConnections, transport),
    prepare: (count) => providers.llm.reply(...Array.from({ length: count + 10 }, () => model)),
    reset: () => {
      providers.llm.reset();
      providers.stt.reset();
      providers.tts.reset();
    },
    refused: () => [...providers.stt.refused, ...providers.tts.refused],
    answerMs: () => ({ stt: providers.stt.answerMs, tts: providers.tts.answerMs }),
  };
}

function bareTarget(answerFile: string): Target {
  return {
    kind: 'bare',
    transport: 'websocket',
    spec: bareServer(answerFile),
    prepare: () => undefined,
    reset: () => undefined,
    refused: () => [],
    answerMs: () => ({ stt: [], tts: [] }),
  };
}

/** MAC-like ids, unique per run: `02:<run>:<index>`. */
const deviceIds = (run: number, count: number) =>
  Array.from({ length: count }, (_, index) => {
    const bytes = [0x02, run & 0xff, (index >> 16) & 0xff, (index >> 8) & 0xff, index & 0xff, 0xb0];
    return bytes.map((byte) => byte.toString(16).padStart(2, '0')).join(':');
  });

let runs = 0;

/** Boots `count` devices on `server` in `swarm` (over MQTT: with their audio channel open, or idle on MQTT without `channel`). */
async function boot(swarm: XiaozhiSwarm, server: ServerProcess, count: number, direct?: { token: string }, mqtt?: { channel: boolean }): Promise<void> {
  await swarm.connect({
    direct,
    mqtt,
    baseUrl: `http://127.0.0.1:${server.port}`,
    ids: deviceIds(++runs, count),
    concurrency: CONNECT_CONCURRENCY,
    timeoutMs: CONNECT_TIMEOUT_MS,
  });
}

/** Every device of `swarm` talks `rounds` exchanges, spread over about one exchange. */
function talk(swarm: XiaozhiSwarm, conversation: Conversation, rounds: number, spreadMs: number) {
  const base64 = (packet: Uint8Array) => Buffer.from(packet).toString('base64');
  return swarm.talk({
    packets: conversation.packets.map(base64),
    lastSpeechPacket: conversation.lastSpeechPacket,
    silencePacket: base64(conversation.packets[conversation.packets.length - 1]),
    maxPackets: Math.ceil((conversation.lastSpeechPacket * FRAME_MS + MAX_UNANSWERED_MS) / FRAME_MS),
    transcript: UTTERANCE,
    rounds,
    spreadMs,
    timeoutMs: spreadMs + rounds * EXCHANGE_BOUND_MS,
  });
}

const cpuOf = (pid: number) => procCpuMicros(pid) ?? Number.NaN;

/** The gateway's event loop, from the loop probe: utilization so far, and how late its timer fired since the last reading. */
interface LoopReading {
  activeMs: number;
  idleMs: number;
  delayMs: { p50: number; p99: number; max: number };
}
const loopOf = (server: ServerProcess) => server.ask<LoopReading>({ type: 'loop' });

/** Nanoseconds the thread `pid` (a process's main thread) has waited, runnable, for a CPU (`/proc/<pid>/schedstat`); NaN without `/proc`. */
function runQueueWaitNs(pid: number): number {
  try {
    return Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[1]);
  } catch {
    return Number.NaN;
  }
}

/** Microseconds in which some task of the machine waited for a CPU (`/proc/pressure/cpu`, "some"); NaN where the kernel has no PSI. */
function cpuPressureMicros(): number {
  try {
    return Number(/^some .*total=(\d+)/m.exec(readFileSync('/proc/pressure/cpu', 'utf8'))?.[1]);
  } catch {
    return Number.NaN;
  }
}

/** Nearest-rank percentiles of `values`, rounded. */
function spread(values: number[]) {
  const sorted = Float64Array.from(values).sort();
  return { p50: round(percentile(sorted, 0.5), 1), p99: round(percentile(sorted, 0.99), 1), max: round(sorted[sorted.length - 1] ?? Number.NaN, 1) };
}

/** One run: `devices` devices in continuous conversation on a fresh gateway, and what it cost. */
interface RunFigures {
  server: 'gateway' | 'bare';
  devices: number;
  rounds: number;
  exchanges: { done: number; failed: number; problems: string[] };
  /** From the packet carrying the end of speech to the first reply frame, at the device. */
  end_of_speech_to_first_frame_ms: { p50: number; p99: number; max: number };
  /** The same, for each device's first answer (its encoder and resampler made then) and for the answers after it. */
  first_answer_ms: { p50: number; p99: number; max: number };
  later_answers_ms: { p50: number; p99: number; max: number };
  /** The same minus the VAD's silence (`VAD_SILENCE_MS`, 700 ms), which the gateway waits by design. */
  minus_vad_silence_ms: { p50: number; p99: number; max: number };
  /** Its parts: end of speech to `stt` (silence, the upload, the transcript), `stt` to the first frame (turn, model, synthesis, first encode). */
  to_stt_ms: { p50: number; p99: number };
  stt_to_first_frame_ms: { p50: number; p99: number };
  frames: {
    per_exchange: number;
    /** Frames later than one frame time (60 ms) behind the gateway's paced schedule (the first three at once, then one per 60 ms). */
    late_share: number;
    /** Frames arriving after a device playing from the first frame would have needed them (a gap in its speech). */
    underrun_share: number;
    lateness_p99_ms: number;
    /** |inter-arrival − 60 ms| after the first three frames. */
    jitter_p99_ms: number;
    /** Exchanges with fewer or more frames, or sentences, than the answer has. */
    wrong_count: number;
  };
  /** The server's own figures (the gateway's, or the bare baseline's). */
  process: {
    cpu_us_per_exchange: number;
    /** Share of one core the gateway used while the devices talked (user + system, all its threads). */
    cores_while_talking: number;
    /** Share of the time the gateway's event loop was busy while the devices talked (`performance.eventLoopUtilization`). */
    event_loop_utilization: number;
    /** How late a 20 ms timer in the gateway fired while they talked: the stalls every paced frame waits behind. */
    event_loop_delay_ms: { p50: number; p99: number; max: number };
    idle_cpu_us_per_s: number;
    rss_bytes_per_device_idle: number;
    rss_bytes_per_device_after_talking: number;
    heap_bytes_per_device_after_talking: number;
  };
  swarm: { cores: number; loop_delay_ms: { p50: number; p99: number; max: number } };
  /** The machine's one-minute load average as the devices started and as they finished (other jobs share its two cores). */
  load_average: { start: number; end: number };
  machine: {
    /** Share of the time some task of the machine waited for a CPU (PSI `some`): the noise the figures were taken in. */
    cpu_pressure_share: number;
    /** How long the server's main thread waited, runnable, for a CPU, per second: time other processes took from it. */
    server_waited_for_cpu_ms_per_s: number;
  };
  /** How long the zero-delay engines took to answer, in the bench process (none for the bare server). */
  providers_answer_ms: { stt_p99: number; tts_p99: number } | null;
}

/** How a target's devices boot over MQTT: with their audio channel open, ready to talk. */
const channelOf = (target: Target) => (target.transport === 'mqtt' ? { channel: true } : undefined);

/** `devices` devices on a fresh `target` server: warm-up, boot, a quiet window, `rounds` exchanges each. */
async function measureRun(target: Target, conversation: Conversation, options: XiaozhiOptions, devices: number, rounds: number): Promise<RunFigures> {
  return withServer(target.spec, async (server) => {
    // Warm-up on devices of their own, then gone: the JIT, the VAD model, the first codecs.
    if (options.warmup.devices > 0) {
      target.prepare(options.warmup.devices * options.warmup.rounds);
      await withXiaozhiSwarm(async (swarm) => {
        await boot(swarm, server, options.warmup.devices, undefined, channelOf(target));
        await talk(swarm, conversation, options.warmup.rounds, FRAME_MS * 10);
      });
    }
    await sleep(settleMs);
    target.reset();
    const before = await server.usage();
    return withXiaozhiSwarm(async (swarm) => {
      await boot(swarm, server, devices, undefined, channelOf(target));
      await sleep(settleMs);
      const idle = await server.usage();
      const quietCpu = cpuOf(server.pid);
      const quietStart = performance.now();
      await sleep(idleWindowMs);
      const idleCpuPerS = ((cpuOf(server.pid) - quietCpu) / (performance.now() - quietStart)) * 1000;

      target.prepare(devices * rounds);
      const loopBefore = await loopOf(server);
      const cpu = {
        server: cpuOf(server.pid),
        swarm: cpuOf(swarm.pid),
        at: performance.now(),
        load: loadavg()[0],
        waitNs: runQueueWaitNs(server.pid),
        pressure: cpuPressureMicros(),
      };
      // Spread over about one exchange, so the load is steady: at any moment some devices speak, some listen.
      const spreadMs = devices === 1 ? 0 : (conversation.lastSpeechPacket + conversation.expectedFrames + 20) * FRAME_MS;
      const talked = await talk(swarm, conversation, rounds, spreadMs);
      const wallMs = performance.now() - cpu.at;
      const serverMicros = cpuOf(server.pid) - cpu.server;
      const swarmMicros = cpuOf(swarm.pid) - cpu.swarm;
      const machine = {
        gatewayWaitMs: (runQueueWaitNs(server.pid) - cpu.waitNs) / 1e6,
        pressureMs: (cpuPressureMicros() - cpu.pressure) / 1000,
      };
      const loopAfter = await loopOf(server);
      const loop = {
        utilization: (loopAfter.activeMs - loopBefore.activeMs) / (loopAfter.activeMs - loopBefore.activeMs + loopAfter.idleMs - loopBefore.idleMs),
        delayMs: loopAfter.delayMs,
      };
      await sleep(settleMs);
      const after = await server.usage();
      const open = await swarm.count();
      if (open.open !== devices) throw new Error(`xiaozhi: ${devices - open.open} of ${devices} devices of ${server.name} were disconnected`);
      const refused = target.refused();
      if (refused.length > 0) throw new Error(`xiaozhi: the speech servers refused ${refused.length} requests, e.g. ${refused[0]}`);
      return figuresOf(target.kind, devices, rounds, talked.exchanges, conversation, {
        serverMicros,
        wallMs,
        swarmMicros,
        idleCpuPerS,
        swarmLoopDelayMs: talked.loopDelayMs,
        load: { start: round(cpu.load, 2), end: round(loadavg()[0], 2) },
        machine,
        loop,
        memory: { before, idle, after },
        answerMs: target.answerMs(),
      });
    });
  });
}

function figuresOf(
  kind: 'gateway' | 'bare',
  devices: number,
  rounds: number,
  exchanges: Exchange[],
  conversation: Conversation,
  measured: {
    serverMicros: number;
    wallMs: number;
    swarmMicros: number;
    idleCpuPerS: number;
    swarmLoopDelayMs: { p50: number; p99: number; max: number };
    load: { start: number; end: number };
    machine: { gatewayWaitMs: number; pressureMs: number };
    loop: { utilization: number; delayMs: { p50: number; p99: number; max: number } };
    memory: { before: { rss: number; heapUsed: number }; idle: { rss: number; heapUsed: number }; after: { rss: number; heapUsed: number } };
    answerMs: { stt: number[]; tts: number[] };
  },
): RunFigures {
  const done = exchanges.filter((exchange) => !exchange.problem && exchange.ttsStopAt >= 0 && exchange.firstFrameAt >= 0 && exchange.lastSpeechAt >= 0);
  const problems = [...new Set(exchanges.filter((exchange) => exchange.problem).map((exchange) => exchange.problem!))].slice(0, 5);
  const failed = devices * rounds - done.length;
  const latency = done.map((exchange) => exchange.firstFrameAt - exchange.lastSpeechAt);
  let frames = 0;
  let late = 0;
  let underrun = 0;
  let wrongCount = 0;
  const lateness: number[] = [];
  const jitter: number[] = [];
  for (const exchange of done) {
    if (exchange.frames.length !== conversation.expectedFrames || exchange.sentences !== ANSWER_SENTENCES.length) wrongCount += 1;
    exchange.frames.forEach((at, index) => {
      const behind = at - Math.max(0, index - (LEAD_FRAMES - 1)) * FRAME_MS;
      frames += 1;
      lateness.push(behind);
      if (behind > FRAME_MS) late += 1;
      if (at > index * FRAME_MS) underrun += 1;
      if (index >= LEAD_FRAMES) jitter.push(Math.abs(at - exchange.frames[index - 1] - FRAME_MS));
    });
  }
  const memory = measured.memory;
  const perDevice = (after: number, before: number) => round((after - before) / devices, 0);
  const answerP99 = (values: number[]) => round(percentile(Float64Array.from(values).sort(), 0.99), 2);
  const latencySpread = spread(latency);
  return {
    server: kind,
    devices,
    rounds,
    exchanges: { done: done.length, failed, problems },
    end_of_speech_to_first_frame_ms: latencySpread,
    first_answer_ms: spread(done.filter((exchange) => exchange.round === 0).map((exchange) => exchange.firstFrameAt - exchange.lastSpeechAt)),
    later_answers_ms: spread(done.filter((exchange) => exchange.round > 0).map((exchange) => exchange.firstFrameAt - exchange.lastSpeechAt)),
    minus_vad_silence_ms: spread(latency.map((ms) => ms - VAD_SILENCE_MS)),
    to_stt_ms: spread(done.map((exchange) => exchange.sttAt - exchange.lastSpeechAt)),
    stt_to_first_frame_ms: spread(done.map((exchange) => exchange.firstFrameAt - exchange.sttAt)),
    frames: {
      per_exchange: conversation.expectedFrames,
      late_share: round(late / Math.max(1, frames), 4),
      underrun_share: round(underrun / Math.max(1, frames), 4),
      lateness_p99_ms: round(percentile(Float64Array.from(lateness).sort(), 0.99), 1),
      jitter_p99_ms: round(percentile(Float64Array.from(jitter).sort(), 0.99), 1),
      wrong_count: wrongCount,
    },
    process: {
      cpu_us_per_exchange: Math.round(measured.serverMicros / Math.max(1, done.length)),
      cores_while_talking: round(measured.serverMicros / 1000 / measured.wallMs, 3),
      event_loop_utilization: round(measured.loop.utilization, 3),
      event_loop_delay_ms: measured.loop.delayMs,
      idle_cpu_us_per_s: Math.round(measured.idleCpuPerS),
      rss_bytes_per_device_idle: perDevice(memory.idle.rss, memory.before.rss),
      rss_bytes_per_device_after_talking: perDevice(memory.after.rss, memory.before.rss),
      heap_bytes_per_device_after_talking: perDevice(memory.after.heapUsed, memory.before.heapUsed),
    },
    swarm: { cores: round(measured.swarmMicros / 1000 / measured.wallMs, 3), loop_delay_ms: measured.swarmLoopDelayMs },
    load_average: measured.load,
    machine: {
      cpu_pressure_share: round(measured.machine.pressureMs / measured.wallMs, 3),
      server_waited_for_cpu_ms_per_s: round((measured.machine.gatewayWaitMs / measured.wallMs) * 1000, 1),
    },
    providers_answer_ms: kind === 'gateway' ? { stt_p99: answerP99(measured.answerMs.stt), tts_p99: answerP99(measured.answerMs.tts) } : null,
  };
}

/** The libopus + VAD baseline's CPU for one exchange, and the ratio of a run's gateway CPU to it. */
function cpuAgainst(run: RunFigures, baseline: ExchangeCost) {
  const baselineMicros = baseline.uplinkMicros + baseline.downlinkMicros;
  const cpuRatio = ratio(run.process.cpu_us_per_exchange, baselineMicros);
  return {
    devices: run.devices,
    gateway_cpu_us_per_exchange: run.process.cpu_us_per_exchange,
    baseline_cpu_us_per_exchange: Math.round(baselineMicros),
    ratio: cpuRatio,
  };
}

// ---------------------------------------------------------------------------------------------
// Idle memory

interface IdleMemory {
  devices: number;
  rss_bytes_per_device: number;
  heap_bytes_per_device: number;
  external_bytes_per_device: number;
  rss_mb_before: number;
  rss_mb_after: number;
}

async function idleMemory(server: ServerProcess, devices: number, connect: () => Promise<{ open: number }>): Promise<IdleMemory> {
  await sleep(settleMs);
  const before = await server.usage();
  const { open } = await connect();
  if (open !== devices) throw new Error(`xiaozhi idle: ${devices - open} of ${devices} devices of ${server.name} closed while idle`);
  const after = await server.usage();
  const per = (key: 'rss' | 'heapUsed' | 'external') => round((after[key] - before[key]) / devices, 0);
  return {
    devices,
    rss_bytes_per_device: per('rss'),
    heap_bytes_per_device: per('heapUsed'),
    external_bytes_per_device: per('external'),
    rss_mb_before: round(before.rss / 2 ** 20, 1),
    rss_mb_after: round(after.rss / 2 ** 20, 1),
  };
}

/** `devices` xiaozhi devices after their hello, then as many LLM-gateway devices (`/` with `Device-Id`), each on a fresh gateway with the same settings. */
async function measureIdle(providers: Providers, devices: number) {
  const xiaozhiIdle = (direct?: { token: string }) =>
    withServer(voiceGateway(providers, devices + 100), (server) =>
      withXiaozhiSwarm((swarm) =>
        idleMemory(server, devices, async () => {
          await boot(swarm, server, devices, direct);
          await sleep(idleSettleMs);
          return swarm.count();
        }),
      ),
    );
  const xiaozhi = await xiaozhiIdle();
  // The same devices configured by hand, without the configuration request: what the gateway keeps of that request (its boot record).
  const withoutConfiguration = await xiaozhiIdle({ token: BENCH_TOKEN });
  const llmGateway = await withServer(voiceGateway(providers, devices + 100), (server) =>
    withSwarms(1, ([swarm]) =>
      idleMemory(server, devices, async () => {
        await swarm.connect({
          url: `ws://127.0.0.1:${server.port}/`,
          ids: Array.from({ length: devices }, (_, index) => `idle-${String(index).padStart(6, '0')}`),
          token: BENCH_TOKEN,
          idHeader: true,
          localAddresses: [],
          perAddress: devices,
          firstIndex: 0,
          concurrency: CONNECT_CONCURRENCY,
          timeoutMs: CONNECT_TIMEOUT_MS,
        });
        await sleep(idleSettleMs);
        return swarm.count();
      }),
    ),
  );
  return { xiaozhi, withoutConfiguration, llmGateway };
}

/** `devices` xiaozhi devices idle on the gateway's MQTT server (connected with their credentials, no audio channel), on a fresh gateway. */
async function measureMqttIdle(providers: Providers, devices: number) {
  return withServer(voiceGateway(providers, devices + 100, 'mqtt'), (server) =>
    withXiaozhiSwarm(async (swarm) => {
      const memory = await idleMemory(server, devices, async () => {
        await boot(swarm, server, devices, undefined, { channel: false });
        await sleep(idleSettleMs);
        return swarm.count();
      });
      return { held: (await swarm.count()).open, ...memory };
    }),
  );
}

// ---------------------------------------------------------------------------------------------

/**
 * xiaozhi devices (issue 37; BENCHMARKS.md "xiaozhi devices (issue 37)"): the gateway's own
 * latency from a device's end of speech to its first reply frame, its CPU per spoken exchange
 * against libopus and Silero VAD alone doing the same audio work (bench/suites/audio.ts), how many
 * devices in continuous conversation one instance keeps on time, and the memory of an idle device
 * against an idle LLM-gateway device. Devices live in a client process of their own
 * (bench/support/xiaozhi-swarm-process.ts); the model, recognizer and synthesizer are zero-delay
 * scripted servers in the bench process.
 *
 * Part `mqtt` (issue 34) does the same over MQTT + UDP: latency to the first reply UDP packet and
 * CPU per second of two-way audio beside the WebSocket gateway's, and idle MQTT devices held with
 * their memory.
 *
 * `BENCH_XIAOZHI_PARTS=single,scale,idle,mqtt` (all by default) runs some of the parts;
 * `BENCH_XIAOZHI_STEPS=100,150` replaces the scale's steps (e.g. to profile one with
 * `BENCH_CPU_PROF_DIR`).
 */
export async function benchXiaozhi(options: XiaozhiOptions): Promise<void> {
  idleWindowMs = options.pauses?.idleWindowMs ?? idleWindowMs;
  settleMs = options.pauses?.settleMs ?? settleMs;
  idleSettleMs = options.pauses?.idleSettleMs ?? idleSettleMs;
  const parts = new Set((process.env.BENCH_XIAOZHI_PARTS || 'single,scale,idle,mqtt').split(','));
  const steps = process.env.BENCH_XIAOZHI_STEPS ? process.env.BENCH_XIAOZHI_STEPS.split(',').map(Number) : options.scale.steps;
  const conversation = await prepare();
  const baseline = await measureExchangeBaseline(
    { packets: conversation.packets.slice(0, conversation.heardPackets), sentences: [...conversation.sentences.values()] },
    options.baseline.rounds,
    options.baseline.repeats,
  );
  const dir = mkdtempSync(join(tmpdir(), 'bench-xiaozhi-'));
  const providers: Providers = {
    llm: await ScriptedLlm.start(),
    stt: await FixedTranscriptionServer.start(UTTERANCE),
    tts: await SentenceSpeechServer.start(conversation.sentences),
  };
  try {
    const audio = {
      uplink_s: round(baseline.uplinkSeconds, 2),
      downlink_s: round(baseline.downlinkSeconds, 2),
      speech_end_packet: conversation.lastSpeechPacket,
      vad_end_packet: conversation.heardPackets - 1,
      reply_frames: conversation.expectedFrames,
    };
    const baselineFigure = {
      uplink_decode_vad_us: Math.round(baseline.uplinkMicros),
      downlink_resample_encode_us: Math.round(baseline.downlinkMicros),
      exchange_us: Math.round(baseline.uplinkMicros + baseline.downlinkMicros),
      us_per_audio_s: {
        uplink: Math.round(baseline.uplinkMicros / baseline.uplinkSeconds),
        downlink: Math.round(baseline.downlinkMicros / baseline.downlinkSeconds),
      },
    };

    const gateway = gatewayTarget(providers, 1000);
    const bare = bareTarget(writeAnswer(conversation, dir));
    /** Each count measured on the bare server, then on the gateway, so both meet about the same load from the machine's other jobs. */
    const pair = async (devices: number, rounds: number) => {
      const baselineRun = await measureRun(bare, conversation, options, devices, rounds);
      emit({ figure: 'xiaozhi_exchanges', ...baselineRun, audio });
      const gatewayRun = await measureRun(gateway, conversation, options, devices, rounds);
      emit({ figure: 'xiaozhi_exchanges', ...gatewayRun, audio });
      return { gateway: gatewayRun, bare: baselineRun };
    };
    const measured: { gateway: RunFigures; bare: RunFigures }[] = [];
    let held: number | undefined;
    if (parts.has('single') && options.single.rounds > 0) measured.push(await pair(1, options.single.rounds));
    if (parts.has('scale')) {
      let crossedAt: number | undefined;
      for (const devices of steps) {
        // Every step up to the latency figure's count (a noisy moment of the machine can push one step over the threshold); past it, one
        // step past the crossing shows the trend, and more would only overload.
        if (crossedAt !== undefined && devices > options.scale.latencyDevices && steps.indexOf(devices) > steps.indexOf(crossedAt) + 1) break;
        const run = await pair(devices, options.scale.rounds);
        measured.push(run);
        if (crossedAt === undefined && (run.gateway.frames.late_share > options.scale.lateShare || run.gateway.exchanges.failed > 0)) crossedAt = devices;
      }
      const steady = measured.filter((run) => run.gateway.devices > 1);
      const holds = (run: RunFigures) => run.frames.late_share <= options.scale.lateShare && run.exchanges.failed === 0;
      /** The largest count below which every step held (a step that held above one that did not is noise, reported but not counted). */
      const capacity = (which: 'gateway' | 'bare') => {
        let count = 0;
        for (const run of steady) {
          if (!holds(run[which])) break;
          count = run[which].devices;
        }
        return count;
      };
      const step = (run: RunFigures) => ({
        late_share: run.frames.late_share,
        underrun_share: run.frames.underrun_share,
        lateness_p99_ms: run.frames.lateness_p99_ms,
        latency_p50_ms: run.end_of_speech_to_first_frame_ms.p50,
        latency_p99_ms: run.end_of_speech_to_first_frame_ms.p99,
        failed: run.exchanges.failed,
        cores: run.process.cores_while_talking,
        event_loop_utilization: run.process.event_loop_utilization,
        waited_for_cpu_ms_per_s: run.machine.server_waited_for_cpu_ms_per_s,
        cpu_pressure_share: run.machine.cpu_pressure_share,
      });
      held = capacity('gateway');
      emit({
        figure: 'xiaozhi_scale',
        late_share_threshold: options.scale.lateShare,
        steps: steady.map((run) => ({ devices: run.gateway.devices, gateway: step(run.gateway), bare: step(run.bare) })),
        devices_held: { gateway: held, bare: capacity('bare') },
        /** Share of a core per device at the largest count held (its CPU while talking, divided by the devices). */
        gateway_cores_per_device_at_that: held
          ? round(steady.find((run) => run.gateway.devices === held)!.gateway.process.cores_while_talking / held, 4)
          : null,
        crossed_at: crossedAt ?? null,
        target: { peer_devices_per_core: PEER_DEVICES_PER_CORE, devices_per_core: TARGET_DEVICES_PER_CORE, met: held >= TARGET_DEVICES_PER_CORE },
      });
    }
    if (measured.length > 0) {
      const latencyRuns = [
        measured.find((run) => run.gateway.devices === 1),
        held && held !== options.scale.latencyDevices ? measured.find((run) => run.gateway.devices === held) : undefined,
        measured.find((run) => run.gateway.devices === options.scale.latencyDevices) ?? measured.filter((run) => run.gateway.devices > 1).at(-1),
      ];
      const latencyOf = (run: RunFigures) => ({
        exchanges: run.exchanges.done,
        raw_p50_ms: run.end_of_speech_to_first_frame_ms.p50,
        raw_p99_ms: run.end_of_speech_to_first_frame_ms.p99,
        minus_silence_p50_ms: run.minus_vad_silence_ms.p50,
        minus_silence_p99_ms: run.minus_vad_silence_ms.p99,
        to_stt_p50_ms: run.to_stt_ms.p50,
        stt_to_first_frame_p50_ms: run.stt_to_first_frame_ms.p50,
        stt_to_first_frame_p99_ms: run.stt_to_first_frame_ms.p99,
      });
      emit({
        figure: 'xiaozhi_added_latency',
        vad_silence_ms: VAD_SILENCE_MS,
        runs: latencyRuns
          .filter((run): run is { gateway: RunFigures; bare: RunFigures } => run !== undefined)
          .map((run) => ({
            devices: run.gateway.devices,
            gateway: latencyOf(run.gateway),
            bare: latencyOf(run.bare),
            gateway_adds: {
              p50_ms: round(run.gateway.end_of_speech_to_first_frame_ms.p50 - run.bare.end_of_speech_to_first_frame_ms.p50, 1),
              p99_ms: round(run.gateway.end_of_speech_to_first_frame_ms.p99 - run.bare.end_of_speech_to_first_frame_ms.p99, 1),
            },
            providers_answer_ms: run.gateway.providers_answer_ms,
          })),
      });
      const cpuRuns = measured.map((run) => ({
        ...cpuAgainst(run.gateway, baseline),
        bare_server_cpu_us_per_exchange: run.bare.process.cpu_us_per_exchange,
        ratio_to_bare_server: ratio(run.gateway.process.cpu_us_per_exchange, run.bare.process.cpu_us_per_exchange),
      }));
      const headline = cpuRuns.find((run) => run.devices === 10) ?? cpuRuns[0];
      emit({
        figure: 'xiaozhi_session_cpu',
        audio,
        baseline: baselineFigure,
        runs: cpuRuns,
        headline_devices: headline.devices,
        ratio: headline.ratio,
        gateway_us_per_two_way_audio_s: Math.round(headline.ratio * (baselineFigure.us_per_audio_s.uplink + baselineFigure.us_per_audio_s.downlink)),
        target: { max_ratio: TARGET_CPU_RATIO, met: headline.ratio <= TARGET_CPU_RATIO },
      });
    }
    let idle: Awaited<ReturnType<typeof measureIdle>> | undefined;
    if (parts.has('idle')) {
      idle = await measureIdle(providers, options.idle.devices);
      emit({
        figure: 'xiaozhi_idle_memory',
        devices: options.idle.devices,
        xiaozhi: idle.xiaozhi,
        xiaozhi_without_configuration_request: idle.withoutConfiguration,
        llm_gateway_device: idle.llmGateway,
        ratio: {
          rss_per_device: ratio(idle.xiaozhi.rss_bytes_per_device, idle.llmGateway.rss_bytes_per_device),
          heap_per_device: ratio(idle.xiaozhi.heap_bytes_per_device, idle.llmGateway.heap_bytes_per_device),
        },
      });
    }
    if (parts.has('mqtt') && options.mqtt) {
      const mqttGateway = gatewayTarget(providers, 1000, 'mqtt');
      const twoWaySeconds = baseline.uplinkSeconds + baseline.downlinkSeconds;
      const comparisons = [];
      for (const devices of options.mqtt.devices) {
        // The WebSocket gateway's run at this count from the parts above, or one made now, just before the MQTT one.
        const earlier = measured.find((run) => run.gateway.devices === devices);
        const websocket = earlier?.gateway ?? (await measureRun(gateway, conversation, options, devices, options.mqtt.rounds));
        if (!earlier) emit({ figure: 'xiaozhi_exchanges', transport: 'websocket', ...websocket, audio });
        const mqtt = await measureRun(mqttGateway, conversation, options, devices, options.mqtt.rounds);
        emit({ figure: 'xiaozhi_exchanges', transport: 'mqtt', ...mqtt, audio });
        const latencyOf = (run: RunFigures) => ({
          exchanges: run.exchanges.done,
          failed: run.exchanges.failed,
          raw_p50_ms: run.end_of_speech_to_first_frame_ms.p50,
          raw_p99_ms: run.end_of_speech_to_first_frame_ms.p99,
          minus_silence_p50_ms: run.minus_vad_silence_ms.p50,
          minus_silence_p99_ms: run.minus_vad_silence_ms.p99,
          late_share: run.frames.late_share,
        });
        const bare = earlier?.bare;
        comparisons.push({
          devices,
          websocket: latencyOf(websocket),
          mqtt: latencyOf(mqtt),
          mqtt_minus_websocket: {
            p50_ms: round(mqtt.end_of_speech_to_first_frame_ms.p50 - websocket.end_of_speech_to_first_frame_ms.p50, 1),
            p99_ms: round(mqtt.end_of_speech_to_first_frame_ms.p99 - websocket.end_of_speech_to_first_frame_ms.p99, 1),
          },
          /** Over the bare server's (WebSocket) at this count, when the parts above measured it. */
          mqtt_adds_over_bare: bare
            ? {
                p50_ms: round(mqtt.end_of_speech_to_first_frame_ms.p50 - bare.end_of_speech_to_first_frame_ms.p50, 1),
                p99_ms: round(mqtt.end_of_speech_to_first_frame_ms.p99 - bare.end_of_speech_to_first_frame_ms.p99, 1),
              }
            : null,
          cpu_us_per_two_way_audio_s: {
            websocket: Math.round(websocket.process.cpu_us_per_exchange / twoWaySeconds),
            mqtt: Math.round(mqtt.process.cpu_us_per_exchange / twoWaySeconds),
            ratio: ratio(mqtt.process.cpu_us_per_exchange, websocket.process.cpu_us_per_exchange),
          },
        });
      }
      emit({ figure: 'xiaozhi_mqtt_vs_websocket', vad_silence_ms: VAD_SILENCE_MS, two_way_audio_s: round(twoWaySeconds, 2), runs: comparisons });
      const mqttIdle = await measureMqttIdle(providers, options.mqtt.idleDevices);
      emit({
        figure: 'xiaozhi_mqtt_idle',
        devices: options.mqtt.idleDevices,
        mqtt: mqttIdle,
        websocket: idle?.xiaozhi ?? null,
        ratio: idle ? { rss_per_device: ratio(mqttIdle.rss_bytes_per_device, idle.xiaozhi.rss_bytes_per_device) } : null,
      });
    }
  } finally {
    await Promise.all([providers.llm.close(), providers.stt.close(), providers.tts.close()]);
    rmSync(dir, { recursive: true, force: true });
  }
}
