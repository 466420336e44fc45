import { execFileSync } from 'child_process';
import { randomUUID } from 'crypto';
import { readFileSync } from 'fs';
import Redis from 'ioredis';

/** The Redis the fleet figures run on: `BENCH_REDIS_URL`, else `REDIS_URL`, else the local one. */
export const BENCH_REDIS_URL = process.env.BENCH_REDIS_URL || process.env.REDIS_URL || 'redis://127.0.0.1:6379';

/** A key prefix of this run's own, so nothing the bench writes meets anyone else's keys. */
export function benchPrefix(what: string): string {
  return `bench-${what}:${randomUUID().slice(0, 8)}:`;
}

let clockTicksPerSecond: number | undefined;
function ticksPerSecond(): number {
  clockTicksPerSecond ??= Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  return clockTicksPerSecond;
}

/**
 * User + system CPU of process `pid` from `/proc/<pid>/stat` (fields 14 and 15, clock ticks), in
 * microseconds; `undefined` where `/proc` cannot be read. Read from outside, it costs the process
 * nothing (the usage probe's full garbage collections would be counted in a short window).
 */
export function procCpuMicros(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) / ticksPerSecond()) * 1e6;
  } catch {
    return undefined;
  }
}

/**
 * A client of the bench's Redis: checks it answers, finds its process when it runs on this
 * machine (for its CPU per operation), and removes a run's keys afterwards.
 */
export class BenchRedis {
  private constructor(
    private readonly redis: Redis,
    /** The Redis server's pid when it is a local process whose CPU can be read. */
    readonly pid: number | undefined,
  ) {}

  static async open(): Promise<BenchRedis> {
    const redis = new Redis(BENCH_REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
    try {
      await redis.connect();
    } catch (error) {
      redis.disconnect();
      throw new Error(
        `The fleet figures need a Redis at ${BENCH_REDIS_URL} (set BENCH_REDIS_URL, or start one: redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no): ${(error as Error).message}`,
      );
    }
    const info = await redis.info('server');
    const pid = Number(/process_id:(\d+)/.exec(info)?.[1]);
    let local: number | undefined;
    try {
      if (pid && readFileSync(`/proc/${pid}/comm`, 'utf8').includes('redis')) local = pid;
    } catch {
      local = undefined;
    }
    return new BenchRedis(redis, local);
  }

  /** The Redis server's CPU so far, microseconds, when it can be read. */
  cpuMicros(): number | undefined {
    return this.pid === undefined ? undefined : procCpuMicros(this.pid);
  }

  /** Deletes every key under `prefix`. */
  async removeKeys(prefix: string): Promise<void> {
    let cursor = '0';
    do {
      const [next, keys] = await this.redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      if (keys.length > 0) await this.redis.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  }

  /** Commands the server has processed since it started (`total_commands_processed`), this question included. */
  async commandsProcessed(): Promise<number> {
    return Number(/total_commands_processed:(\d+)/.exec(await this.redis.info('stats'))?.[1]);
  }

  /** Bytes Redis holds for its data (`used_memory`), after it returns freed pages to its allocator. */
  async usedMemory(): Promise<number> {
    await this.redis.call('MEMORY', 'PURGE').catch(() => undefined);
    return Number(/used_memory:(\d+)/.exec(await this.redis.info('memory'))?.[1]);
  }

  close(): void {
    this.redis.disconnect();
  }
}
