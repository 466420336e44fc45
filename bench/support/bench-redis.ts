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

  /** Bytes Redis holds for its data (`used_memory`), after it returns freed pages to its allocator. */
  async usedMemory(): Promise<number> {
    await this.redis.call('MEMORY', 'PURGE').catch(() => undefined);
    return Number(/used_memory:(\d+)/.exec(await this.redis.info('memory'))?.[1]);
  }

  /**
   * Commands Redis has executed so far, in one `INFO stats commandstats`: `total` is
   * `total_commands_processed`, `calls` the calls per command of `commandstats`. Both count the
   * commands a script runs inside it as well as the `eval`/`evalsha` that ran it.
   */
  async commands(): Promise<RedisCommandReading> {
    const info = (await this.redis.call('INFO', 'stats', 'commandstats')) as string;
    const calls: Record<string, number> = {};
    for (const match of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) calls[match[1]] = Number(match[2]);
    return { total: Number(/total_commands_processed:(\d+)/.exec(info)?.[1]), calls };
  }

  close(): void {
    this.redis.disconnect();
  }
}

/** One reading of {@link BenchRedis.commands}. */
export interface RedisCommandReading {
  total: number;
  calls: Record<string, number>;
}

/**
 * Redis commands per operation between two readings, the readings' own `INFO` left out:
 * `commands` executed (those a script ran included), `scripts` the `eval` and `evalsha` among
 * them, and `by_command` from `commandstats` (those under 0.05 per operation summed as `other`). Redis counts every client's commands: the figure is
 * only this run's while nothing else uses that Redis.
 */
export function commandsPer(before: RedisCommandReading, after: RedisCommandReading, operations: number) {
  const delta = (name: string) => (after.calls[name] ?? 0) - (before.calls[name] ?? 0);
  const info = delta('info');
  // Commands under 0.05 per operation are summed as `other`: a timer's, or another client's, not the operation's.
  const byCommand: Record<string, number> = {};
  let other = 0;
  for (const name of Object.keys(after.calls).sort()) {
    const perOperation = delta(name) / operations;
    if (name === 'info' || perOperation === 0) continue;
    if (perOperation < 0.05) other += perOperation;
    else byCommand[name] = Math.round(perOperation * 100) / 100;
  }
  if (Math.round(other * 100) > 0) byCommand.other = Math.round(other * 100) / 100;
  return {
    commands: Math.round(((after.total - before.total - info) / operations) * 100) / 100,
    scripts: Math.round(((delta('evalsha') + delta('eval')) / operations) * 100) / 100,
    by_command: byCommand,
  };
}
