import { ChildProcess, fork } from 'child_process';
import { join } from 'path';
import { BENCH_BUILD, PROJECT_ROOT } from './processes';

/** What the parent asks a swarm process (device-swarm-process.ts). */
export type SwarmCommand =
  | {
      type: 'connect';
      url: string;
      /** One device per id, connected in this order. */
      ids: string[];
      token: string;
      /** Whether each socket names its device (`Device-Id`); without it, plain LLM-gateway clients. */
      idHeader: boolean;
      /** Source addresses (127.0.0.x) taken in turn, `perAddress` sockets each, so no one address runs out of ephemeral ports. */
      localAddresses: string[];
      perAddress: number;
      /** Index of the first id in the whole fleet, so every swarm picks source addresses from one sequence. */
      firstIndex: number;
      concurrency: number;
      timeoutMs: number;
    }
  | { type: 'expect'; text: string }
  | { type: 'collect'; expect: number; timeoutMs: number }
  | { type: 'count' }
  | { type: 'close' };

export type SwarmAnswer =
  | { type: 'connect'; startMs: number; endMs: number; latenciesMs: number[]; error?: string }
  | { type: 'expect' }
  | { type: 'collect'; arrivals: number[]; arrived: number; wrongPush?: string }
  | { type: 'count'; open: number; total: number }
  | { type: 'close' }
  | { type: 'failed'; error: string };

type AnswerOf<T extends SwarmCommand['type']> = Extract<SwarmAnswer, { type: T }>;

/** Monotonic milliseconds, comparable with a swarm's (the machine's CLOCK_MONOTONIC). */
export const monotonicMs = () => Number(process.hrtime.bigint()) / 1e6;

/** How long any one question to a swarm may take, on top of the time its command carries. */
const ANSWER_MARGIN_MS = 30_000;

/**
 * Devices held by a client process of their own (bench/support/device-swarm-process.ts): each
 * connects to the LLM gateway with a bearer token and, for fleet devices, a `Device-Id`, waits for
 * its `status connected`, and from then on notes when a push (`llm_response`, origin `push`)
 * arrives. Its sockets count against its own file-descriptor limit, not the bench's.
 */
export class DeviceSwarm {
  private questions = 0;
  private gone = false;

  private constructor(private readonly child: ChildProcess) {
    child.once('exit', () => (this.gone = true));
  }

  /** Starts a swarm process; resolves once it listens for commands. */
  static async start(): Promise<DeviceSwarm> {
    const child = fork(join(BENCH_BUILD, 'support', 'device-swarm-process.js'), [], { cwd: PROJECT_ROOT, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('The device swarm did not start')), ANSWER_MARGIN_MS);
      child.once('message', () => (clearTimeout(timer), resolve()));
      child.once('exit', (code) => (clearTimeout(timer), reject(new Error(`The device swarm exited (${code}) before it started`))));
    });
    return new DeviceSwarm(child);
  }

  /** Connects the devices; rejects with the swarm's reason when any failed or the time ran out. */
  async connect(command: Omit<Extract<SwarmCommand, { type: 'connect' }>, 'type'>): Promise<AnswerOf<'connect'>> {
    const answer = await this.ask({ type: 'connect', ...command }, command.timeoutMs);
    if (answer.error) throw new Error(`A device swarm could not connect to ${command.url}: ${answer.error}`);
    return answer;
  }

  /** Forgets earlier pushes; the next ones must carry `text`. */
  async expect(text: string): Promise<void> {
    await this.ask({ type: 'expect', text }, 0);
  }

  /** Waits until `expect` devices have their push (or `timeoutMs` passed); when each arrived, -1 for none. */
  collect(expect: number, timeoutMs: number): Promise<AnswerOf<'collect'>> {
    return this.ask({ type: 'collect', expect, timeoutMs }, timeoutMs);
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

  private ask<T extends SwarmCommand['type']>(command: Extract<SwarmCommand, { type: T }>, timeoutMs: number): Promise<AnswerOf<T>> {
    if (this.gone) return Promise.reject(new Error('The device swarm has exited'));
    const id = ++this.questions;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.child.off('message', onMessage);
        reject(new Error(`The device swarm did not answer "${command.type}"`));
      }, timeoutMs + ANSWER_MARGIN_MS);
      const onMessage = (message: SwarmAnswer & { id?: number }) => {
        if (message.id !== id) return;
        clearTimeout(timer);
        this.child.off('message', onMessage);
        if (message.type === 'failed') reject(new Error(`The device swarm failed: ${message.error}`));
        else resolve(message as AnswerOf<T>);
      };
      this.child.on('message', onMessage);
      this.child.send({ ...command, id });
    });
  }
}

/** Starts `count` swarms, runs `body`, and stops them whatever happens. */
export async function withSwarms<T>(count: number, body: (swarms: DeviceSwarm[]) => Promise<T>): Promise<T> {
  const started = await Promise.allSettled(Array.from({ length: count }, () => DeviceSwarm.start()));
  const swarms = started.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
  try {
    const failed = started.find((result) => result.status === 'rejected');
    if (failed) throw (failed as PromiseRejectedResult).reason;
    return await body(swarms);
  } finally {
    await Promise.all(swarms.map((swarm) => swarm.stop()));
  }
}
