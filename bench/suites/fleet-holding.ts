import { WebSocket } from 'ws';
import { BenchRedis, BENCH_REDIS_URL, benchPrefix } from '../support/bench-redis';
import type { ServerProcess } from '../support/processes';
import { BENCH_TOKEN, gatewayServer } from '../support/servers';
import { emit, round } from '../support/stats';
import { withServer } from './tool-calls';

export interface HoldingOptions {
  /** Offline devices each given `pushes` held pushes of `chars` characters (the bounds' defaults: 16 and 2,000). */
  devices: number;
  pushes: number;
  chars: number;
  /** Concurrent HTTP requests while holding. */
  concurrency: number;
}

const AUTH = { Authorization: `Bearer ${BENCH_TOKEN}`, 'Content-Type': 'application/json' };

/** The owner's device connects once and leaves, so its id is the bench token's and pushes may be held for it. */
async function ownOnce(port: number, id: string): Promise<void> {
  const socket = new WebSocket(`ws://127.0.0.1:${port}/`, { headers: { ...AUTH, 'Device-Id': id } });
  await new Promise<void>((resolve, reject) => {
    socket.once('message', () => resolve());
    socket.once('error', reject);
  });
  socket.close();
  await new Promise((resolve) => socket.once('close', resolve));
}

async function hold(port: number, id: string, text: string): Promise<void> {
  for (;;) {
    const response = await fetch(`http://127.0.0.1:${port}/devices/${id}/say`, { method: 'POST', headers: AUTH, body: JSON.stringify({ text, hold_s: 3600 }) });
    const body = (await response.json()) as { delivered?: string; error?: { code: string } };
    if (body.delivered === 'held') return;
    // Still listed as online for a moment after its socket closed: ask again.
    if (body.delivered !== 'spoken' && body.delivered !== 'queued') throw new Error(`holding for ${id}: ${JSON.stringify(body)}`);
  }
}

/** Runs `work` over `items`, `concurrency` at a time. */
async function pooled<T>(items: T[], concurrency: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) await work(items[next++]);
    }),
  );
}

/**
 * Fills `options.devices` offline devices to the per-device bound, in memory (the gateway's heap
 * after a full collection) and in Redis (`used_memory`), and reads what one held push and one
 * device at the bound cost, and so the most one token can make an instance keep
 * (`FLEET_HOLD_MAX_PER_PRINCIPAL` pushes; in memory the instance's own bound of 100,000 pushes).
 */
async function measure(server: ServerProcess, redis: BenchRedis | undefined, options: HoldingOptions): Promise<{ perPush: number; perDevice: number }> {
  const ids = Array.from({ length: options.devices }, (_, index) => `held-${String(index).padStart(5, '0')}`);
  for (const id of ['warm-up', ...ids]) await ownOnce(server.port, id);
  await new Promise((resolve) => setTimeout(resolve, 500));
  const text = 'x'.repeat(options.chars - 8);
  // Every code path warm (routes, scripts, schemas) before the first reading.
  for (let index = 0; index < options.pushes; index++) await hold(server.port, 'warm-up', `${String(index).padStart(7, '0')} ${text}`);
  const before = redis ? await redis.usedMemory() : (await server.usage()).heapUsed;
  const holds = ids.flatMap((id) => Array.from({ length: options.pushes }, (_, index) => ({ id, text: `${String(index).padStart(7, '0')} ${text}` })));
  await pooled(holds, options.concurrency, ({ id, text: said }) => hold(server.port, id, said));
  const after = redis ? await redis.usedMemory() : (await server.usage()).heapUsed;
  const perPush = (after - before) / holds.length;
  return { perPush, perDevice: perPush * options.pushes };
}

/** What holding costs, per push and per device at its bound, in memory and in Redis, and one token's most. */
export async function benchHolding(options: HoldingOptions): Promise<void> {
  const env = {
    FLEET_HOLD_MAX_COUNT: String(options.pushes),
    FLEET_HOLD_MAX_PER_PRINCIPAL: String((options.devices + 1) * options.pushes),
    FLEET_PUSH_MAX_CHARS: String(options.chars),
  };
  const inMemory = await withServer(
    (port) => gatewayServer(port, env),
    (server) => measure(server, undefined, options),
  );
  const redis = await BenchRedis.open();
  const prefix = benchPrefix('holding');
  try {
    const inRedis = await withServer(
      (port) => gatewayServer(port, { ...env, REDIS_URL: BENCH_REDIS_URL, REDIS_KEY_PREFIX: prefix }),
      (server) => measure(server, redis, options),
    );
    for (const [store, figures] of [
      ['memory', inMemory],
      ['redis', inRedis],
    ] as const) {
      emit({
        figure: 'fleet_holding_cost',
        store,
        devices: options.devices,
        pushes_per_device: options.pushes,
        chars_per_push: options.chars,
        bytes_per_push: Math.round(figures.perPush),
        kb_per_device_at_bound: round(figures.perDevice / 1024, 1),
        // FLEET_HOLD_MAX_PER_PRINCIPAL's default: what one token can make an instance (or Redis) keep.
        mb_one_token_at_most: round((1000 * figures.perPush) / 1024 / 1024, 2),
        ...(store === 'memory' && { mb_instance_at_most: round((100_000 * figures.perPush) / 1024 / 1024, 1) }),
      });
    }
  } finally {
    await redis.removeKeys(prefix).catch(() => undefined);
    redis.close();
  }
}
