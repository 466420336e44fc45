import { BenchRedis, procCpuMicros } from './bench-redis';
import type { ServerProcess } from './processes';
import { round } from './stats';

/** CPU of each server and of Redis, microseconds, read from outside. */
export interface CpuReading {
  servers: number[];
  redis?: number;
}

export function cpuNow(servers: ServerProcess[], redis?: BenchRedis): CpuReading {
  return { servers: servers.map((server) => procCpuMicros(server.pid) ?? Number.NaN), redis: redis?.cpuMicros() };
}

/** CPU per operation between two readings: the servers together, each server, and Redis (null where it cannot be read). */
export function cpuPer(before: CpuReading, after: CpuReading, operations: number) {
  const each = after.servers.map((value, index) => round((value - before.servers[index]) / operations, 1));
  return {
    server_cpu_us: round(
      each.reduce((sum, value) => sum + value, 0),
      1,
    ),
    each_server_cpu_us: each,
    redis_cpu_us: before.redis === undefined || after.redis === undefined ? null : round((after.redis - before.redis) / operations, 1),
  };
}
