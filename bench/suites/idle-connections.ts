import { WebSocket } from 'ws';
import { ServerProcess, ServerUsage } from '../support/processes';
import { BENCH_TOKEN, bareWsServer, gatewayServer } from '../support/servers';
import { elapsedMs, emit, ratio, round, summarise } from '../support/stats';
import { withServer } from './tool-calls';

export interface IdleOptions {
  connections: number;
}

const AUTH = { Authorization: `Bearer ${BENCH_TOKEN}` };

/** Connects in flight at once: enough to keep both processes busy, few enough not to overrun the backlog. */
const CONNECT_CONCURRENCY = 100;
/** Longest the whole connecting phase of one server may take. */
const PHASE_TIMEOUT_MS = 120_000;
/** A started server settles (JIT, lazy modules, first GCs) before its memory is read. */
const SETTLE_BEFORE_MS = 1000;
/** Connected servers finish what connecting started (session writes, timers) before their memory is read. */
const SETTLE_AFTER_MS = 2000;

export interface IdleFigures {
  connect_total_s: number;
  connects_per_s: number;
  connect_p50_ms: number;
  connect_p99_ms: number;
  rss_bytes_per_connection: number;
  heap_bytes_per_connection: number;
  external_bytes_per_connection: number;
  rss_mb_before: number;
  rss_mb_after: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Opens one client; resolves with the milliseconds until the server's first frame, `status connected`. */
function connectOne(url: string, clients: WebSocket[]): Promise<number> {
  const start = process.hrtime.bigint();
  const client = new WebSocket(url, { headers: AUTH, perMessageDeflate: false });
  clients.push(client);
  return new Promise((resolve, reject) => {
    client.once('message', (data) => {
      const frame = JSON.parse(data.toString());
      if (frame.type === 'status' && frame.status === 'connected') resolve(elapsedMs(start));
      else reject(new Error(`Unexpected first frame: ${data.toString()}`));
    });
    client.on('error', reject);
    client.once('unexpected-response', (_request, response) => reject(new Error(`${url} refused the upgrade: HTTP ${response.statusCode}`)));
    client.once('close', (code) => reject(new Error(`The connection closed (${code}) before its greeting`)));
  });
}

/** Opens `count` clients, `CONNECT_CONCURRENCY` at a time; every client is pushed to `clients` so the caller can close them whatever happens. */
async function connectAll(url: string, count: number, clients: WebSocket[]): Promise<{ latenciesMs: number[]; seconds: number }> {
  const latenciesMs: number[] = [];
  let next = 0;
  const worker = async () => {
    while (next < count) {
      next += 1;
      latenciesMs.push(await connectOne(url, clients));
    }
  };
  const start = process.hrtime.bigint();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`idle: only ${latenciesMs.length} of ${count} clients connected to ${url} within ${PHASE_TIMEOUT_MS / 1000} s`)),
      PHASE_TIMEOUT_MS,
    );
  });
  try {
    await Promise.race([Promise.all(Array.from({ length: Math.min(CONNECT_CONCURRENCY, count) }, worker)), timeout]);
  } finally {
    clearTimeout(timer);
  }
  return { latenciesMs, seconds: elapsedMs(start) / 1000 };
}

/** Holds `count` idle clients on `server` and reads what they cost it. */
async function measureIdle(server: ServerProcess, count: number): Promise<IdleFigures> {
  await sleep(SETTLE_BEFORE_MS);
  const before = await server.usage();
  const clients: WebSocket[] = [];
  try {
    const connected = await connectAll(`ws://127.0.0.1:${server.port}/`, count, clients);
    await sleep(SETTLE_AFTER_MS);
    const after = await server.usage();
    const open = clients.filter((client) => client.readyState === WebSocket.OPEN).length;
    if (open !== count) throw new Error(`idle: ${count - open} of ${count} clients of ${server.name} closed while idle`);
    const latency = summarise(connected.latenciesMs);
    const perConnection = (key: keyof ServerUsage) => round((after[key] - before[key]) / count, 0);
    return {
      connect_total_s: round(connected.seconds),
      connects_per_s: round(count / connected.seconds, 1),
      connect_p50_ms: latency.p50_ms,
      connect_p99_ms: latency.p99_ms,
      rss_bytes_per_connection: perConnection('rss'),
      heap_bytes_per_connection: perConnection('heapUsed'),
      external_bytes_per_connection: perConnection('external'),
      rss_mb_before: round(before.rss / 2 ** 20, 1),
      rss_mb_after: round(after.rss / 2 ** 20, 1),
    };
  } finally {
    clients.forEach((client) => client.terminate());
  }
}

/**
 * Idle connections: `connections` LLM-gateway clients connected at `/` (auth at the upgrade, a
 * session each, heartbeats armed) and left idle on one instance, against the bare `ws` server
 * holding as many. Memory per connection is the growth of the server's RSS and heap, after full
 * garbage collections, divided by the connections; the clients live in the bench process.
 * Connect latency is taken with `CONNECT_CONCURRENCY` connects in flight, so it holds the wait
 * behind the others as well as the handshake and greeting. At a few hundred connections (smoke)
 * the memory figures are within the noise of the allocator and may even be negative.
 */
export async function benchIdleConnections(options: IdleOptions): Promise<void> {
  const count = options.connections;
  const baseline = await withServer(bareWsServer, (server) => measureIdle(server, count));
  const gateway = await withServer(
    (port) => gatewayServer(port, { CLOUD_MAX_CONNECTIONS: String(count + 100) }),
    (server) => measureIdle(server, count),
  );
  const rssRatio = ratio(gateway.rss_bytes_per_connection, baseline.rss_bytes_per_connection);
  emit({
    figure: 'idle_connections',
    connections: count,
    gateway,
    baseline,
    ratio: {
      rss_per_connection: rssRatio,
      heap_per_connection: ratio(gateway.heap_bytes_per_connection, baseline.heap_bytes_per_connection),
      connect_p50: ratio(gateway.connect_p50_ms, baseline.connect_p50_ms),
    },
    target: { max_rss_ratio: 2, met: rssRatio > 0 && rssRatio < 2 },
  });
}
