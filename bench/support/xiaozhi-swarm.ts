import { ChildProcess, fork } from 'child_process';
import { join } from 'path';
import { BENCH_BUILD, PROJECT_ROOT } from './processes';

/** What the parent asks a xiaozhi swarm process (xiaozhi-swarm-process.ts). */
export type XiaozhiCommand =
  | {
      type: 'connect';
      /** The gateway's base URL (`http://127.0.0.1:<port>`): each device asks `/xiaozhi/ota/` there for its WebSocket URL and token. */
      baseUrl: string;
      /** MAC-like device ids, one device each, connected in this order. */
      ids: string[];
      concurrency: number;
      timeoutMs: number;
      /** Skips the configuration request and connects to `<baseUrl>/xiaozhi/v1/` with `token` (a device configured by hand). */
      direct?: { token: string };
      /**
       * Over MQTT + UDP (the configuration answer must carry an `mqtt` section): each device
       * connects to the MQTT server with its credentials; with `channel`, it says hello and opens
       * its UDP audio channel too (as before talking), without it it stays idle on MQTT.
       */
      mqtt?: { channel: boolean };
    }
  | {
      type: 'talk';
      /** One utterance as the device's microphone sends it: base64 Opus packets of 60 ms, silence before and after the speech. */
      packets: string[];
      /** Index of the last packet that carries speech: the utterance's end of speech. */
      lastSpeechPacket: number;
      /** Sent (again and again) once `packets` run out, until `tts start` comes: the microphone hears silence. */
      silencePacket: string;
      /** Most packets one utterance sends before the exchange is given up. */
      maxPackets: number;
      /** What `stt` must say. */
      transcript: string;
      /** Exchanges per device, one after the other (the next `listen start` right after `tts stop`, as the firmware does in auto mode). */
      rounds: number;
      /** Device k of n starts its first exchange k/n of this after the command: the devices are spread over it. */
      spreadMs: number;
      /** Longest the whole command may take; exchanges not over by then are reported unfinished. */
      timeoutMs: number;
    }
  | { type: 'count' }
  | { type: 'close' };

/** One exchange of one device: monotonic milliseconds of the swarm process (-1 where it did not happen). */
export interface Exchange {
  device: number;
  round: number;
  listenAt: number;
  /** When the packet carrying the last of the speech was handed to the socket. */
  lastSpeechAt: number;
  sttAt: number;
  llmAt: number;
  ttsStartAt: number;
  firstFrameAt: number;
  ttsStopAt: number;
  /** Each reply frame's arrival, milliseconds after the first's. */
  frames: number[];
  sentences: number;
  packetsSent: number;
  /** Why the exchange is not counted: an alert, a wrong transcript, a close, the time running out. */
  problem?: string;
}

export type XiaozhiAnswer =
  | { type: 'connect'; startMs: number; endMs: number; latenciesMs: number[]; error?: string }
  | {
      type: 'talk';
      exchanges: Exchange[];
      /** The swarm's own event-loop delay while talking (its timers' lateness shows in every time it stamps). */
      loopDelayMs: { p50: number; p99: number; max: number };
    }
  | { type: 'count'; open: number; total: number }
  | { type: 'close' }
  | { type: 'failed'; error: string };

type AnswerOf<T extends XiaozhiCommand['type']> = Extract<XiaozhiAnswer, { type: T }>;

/** How long any one question to a swarm may take, on top of the time its command carries. */
const ANSWER_MARGIN_MS = 30_000;

/**
 * xiaozhi devices held by a client process of their own (bench/support/xiaozhi-swarm-process.ts),
 * so that pacing their microphones and stamping the answer's frames costs the bench process, and
 * the gateway's core, nothing: each device boots as the firmware does (the configuration request,
 * then the WebSocket with its token, `Device-Id`, `Client-Id`, `Protocol-Version: 1`, and the
 * hello), then talks when told.
 */
export class XiaozhiSwarm {
  private questions = 0;
  private gone = false;

  private constructor(private readonly child: ChildProcess) {
    child.once('exit', () => (this.gone = true));
  }

  get pid(): number {
    return this.child.pid!;
  }

  static async start(): Promise<XiaozhiSwarm> {
    const child = fork(join(BENCH_BUILD, 'support', 'xiaozhi-swarm-process.js'), [], { cwd: PROJECT_ROOT, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('The xiaozhi swarm did not start')), ANSWER_MARGIN_MS);
      child.once('message', () => (clearTimeout(timer), resolve()));
      child.once('exit', (code) => (clearTimeout(timer), reject(new Error(`The xiaozhi swarm exited (${code}) before it started`))));
    });
    return new XiaozhiSwarm(child);
  }

  /** Boots the devices; rejects with the swarm's reason when any failed or the time ran out. */
  async connect(command: Omit<Extract<XiaozhiCommand, { type: 'connect' }>, 'type'>): Promise<AnswerOf<'connect'>> {
    const answer = await this.ask({ type: 'connect', ...command }, command.timeoutMs);
    if (answer.error) throw new Error(`A xiaozhi swarm could not connect to ${command.baseUrl}: ${answer.error}`);
    return answer;
  }

  talk(command: Omit<Extract<XiaozhiCommand, { type: 'talk' }>, 'type'>): Promise<AnswerOf<'talk'>> {
    return this.ask({ type: 'talk', ...command }, command.timeoutMs);
  }

  count(): Promise<AnswerOf<'count'>> {
    return this.ask({ type: 'count' }, 0);
  }

  /** Closes every socket and ends the process. */
  async stop(): Promise<void> {
    if (this.gone) return;
    await this.ask({ type: 'close' }, 0).catch(() => undefined);
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.disconnect();
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  }

  private ask<T extends XiaozhiCommand['type']>(command: Extract<XiaozhiCommand, { type: T }>, timeoutMs: number): Promise<AnswerOf<T>> {
    if (this.gone) return Promise.reject(new Error('The xiaozhi swarm has exited'));
    const id = ++this.questions;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.child.off('message', onMessage);
        reject(new Error(`The xiaozhi swarm did not answer "${command.type}"`));
      }, timeoutMs + ANSWER_MARGIN_MS);
      const onMessage = (message: XiaozhiAnswer & { id?: number }) => {
        if (message.id !== id) return;
        clearTimeout(timer);
        this.child.off('message', onMessage);
        if (message.type === 'failed') reject(new Error(`The xiaozhi swarm failed: ${message.error}`));
        else resolve(message as AnswerOf<T>);
      };
      this.child.on('message', onMessage);
      this.child.send({ ...command, id });
    });
  }
}

/** Starts a swarm, runs `body`, and stops it whatever happens. */
export async function withXiaozhiSwarm<T>(body: (swarm: XiaozhiSwarm) => Promise<T>): Promise<T> {
  const swarm = await XiaozhiSwarm.start();
  try {
    return await body(swarm);
  } finally {
    await swarm.stop();
  }
}
