import { randomUUID } from 'crypto';
import { mkdtemp, rm, writeFile } from 'fs/promises';
import Redis from 'ioredis';
import { tmpdir } from 'os';
import { join } from 'path';
import { WebSocket } from 'ws';
import { PushReceipts } from '../../src/fleet/receipts/push-receipts';
import { RedisPushReceipts } from '../../src/fleet/receipts/push-receipt-store';
import { ScriptedLlm } from '../../test/support/scripted-llm';
import type { BoardIdentity } from '../../test/support/xiaozhi/board-info';
import { helloMessage } from '../../test/support/xiaozhi/device-messages';
import { requestOta } from '../../test/support/xiaozhi/ota-request';
import { BENCH_REDIS_URL, benchPrefix, BenchRedis } from '../support/bench-redis';
import { expectAnswer, FrameSocket } from '../support/frame-socket';
import { ServerProcess } from '../support/processes';
import { BENCH_TOKEN, gatewayServer } from '../support/servers';
import { elapsedMs, emit, ratio, round, summarise } from '../support/stats';
import { withServer } from './tool-calls';

export interface FleetOpsOptions {
  /** Rounds, each measuring `perRound` operations on the gateway without the feature, then as many with it. */
  rounds: number;
  perRound: number;
  warmup: number;
  /** Devices bound by activation for the connect figure (each connect takes the next). */
  boundDevices: number;
}

/** One operation's cost, as measured: its latency, the gateway's CPU and the Redis commands it took. */
interface OperationCost {
  ms: number[];
  gatewayCpuUs: number;
  redisCommands: number;
  redisCpuUs: number;
  operations: number;
}

/** A side of a comparison: what to set up (once) and one operation to time. */
interface Side {
  server: ServerProcess;
  operation: () => Promise<void>;
}

const ANSWER = 'Here is something short to say out loud.';
const OWNER = { name: 'owner', token: BENCH_TOKEN };

/** How long Redis is watched with nothing measured, each round, for the commands and CPU of what runs anyway (the gateways' directories, job queues). */
const BACKGROUND_MS = 500;

/**
 * Times `perRound` operations of each side per round, alternating sides so both meet the same
 * machine, with the gateway's CPU (read from its usage probe, less the cost of reading it) and
 * the Redis commands and CPU they caused: Redis is shared by every client, so what it does anyway
 * in as long (watched before each round) is taken off.
 */
async function compare(redis: BenchRedis, sides: { without: Side; with: Side }, options: FleetOpsOptions) {
  const costs = { without: empty(), with: empty() };
  for (const side of Object.values(sides)) for (let index = 0; index < options.warmup; index++) await side.operation();
  const redisCpu = () => redis.cpuMicros() ?? NaN;
  for (let round = 0; round < options.rounds; round++) {
    const quiet = { commands: await redis.commandsProcessed(), cpu: redisCpu(), at: process.hrtime.bigint() };
    await new Promise((resolve) => setTimeout(resolve, BACKGROUND_MS));
    const quietMs = elapsedMs(quiet.at);
    // Per millisecond; the INFO that reads the count is itself one command.
    const background = { commands: ((await redis.commandsProcessed()) - quiet.commands - 1) / quietMs, cpu: (redisCpu() - quiet.cpu) / quietMs };
    for (const key of ['without', 'with'] as const) {
      const { server, operation } = sides[key];
      const cost = costs[key];
      const probed = (await server.usage()).cpuMicros;
      const cpuBefore = (await server.usage()).cpuMicros;
      const before = { commands: await redis.commandsProcessed(), cpu: redisCpu(), at: process.hrtime.bigint() };
      for (let index = 0; index < options.perRound; index++) {
        const start = process.hrtime.bigint();
        await operation();
        cost.ms.push(elapsedMs(start));
      }
      const windowMs = elapsedMs(before.at);
      cost.gatewayCpuUs += (await server.usage()).cpuMicros - cpuBefore - (cpuBefore - probed);
      cost.redisCommands += (await redis.commandsProcessed()) - before.commands - 1 - background.commands * windowMs;
      cost.redisCpuUs += redisCpu() - before.cpu - background.cpu * windowMs;
      cost.operations += options.perRound;
    }
  }
  const view = (cost: OperationCost) => {
    const latency = summarise(cost.ms);
    return {
      operations: cost.operations,
      p50_ms: latency.p50_ms,
      p99_ms: latency.p99_ms,
      gateway_cpu_us: round(cost.gatewayCpuUs / cost.operations, 1),
      redis_commands: round(cost.redisCommands / cost.operations, 2),
      // NaN where Redis's CPU cannot be read (not a local process).
      redis_cpu_us: Number.isNaN(cost.redisCpuUs) ? null : round(cost.redisCpuUs / cost.operations, 1),
    };
  };
  const [without, withFeature] = [view(costs.without), view(costs.with)];
  return {
    without,
    with: withFeature,
    adds: {
      p50_ms: round(withFeature.p50_ms - without.p50_ms),
      gateway_cpu_us: round(withFeature.gateway_cpu_us - without.gateway_cpu_us, 1),
      redis_commands: round(withFeature.redis_commands - without.redis_commands, 2),
    },
    ratio: { gateway_cpu: ratio(withFeature.gateway_cpu_us, without.gateway_cpu_us), p50: ratio(withFeature.p50_ms, without.p50_ms) },
  };
}

const empty = (): OperationCost => ({ ms: [], gatewayCpuUs: 0, redisCommands: 0, redisCpuUs: 0, operations: 0 });

/** The gateway on the bench's Redis (a prefix of its own), tokens from `tokensFile`. */
const fleetGateway =
  (tokensFile: string, prefix: string, env: Record<string, string> = {}) =>
  (port: number) =>
    gatewayServer(port, { AUTH_TOKENS: '', AUTH_TOKENS_FILE: tokensFile, REDIS_URL: BENCH_REDIS_URL, REDIS_KEY_PREFIX: prefix, ...env });

/** Both sides' gateways at once, so that their rounds can alternate. */
async function withGateways<T>(
  specs: { without: (port: number) => ReturnType<typeof gatewayServer>; with: (port: number) => ReturnType<typeof gatewayServer> },
  body: (servers: { without: ServerProcess; with: ServerProcess }) => Promise<T>,
): Promise<T> {
  return withServer(specs.without, (without) => withServer(specs.with, (withFeature) => body({ without, with: withFeature })));
}

/** An LLM-gateway device connection named `deviceId`, greeted. */
async function llmDevice(server: ServerProcess, deviceId: string): Promise<FrameSocket> {
  const socket = await FrameSocket.open(`ws://127.0.0.1:${server.port}/`, { headers: { Authorization: `Bearer ${BENCH_TOKEN}`, 'Device-Id': deviceId } });
  const greeting = await socket.next();
  expectAnswer(greeting?.type === 'status' && greeting.status === 'connected', greeting, 'the greeting');
  return socket;
}

/** One turn of an LLM-gateway device: `text_input` to the final answer and `idle`. */
async function turn(socket: FrameSocket, llm: ScriptedLlm): Promise<void> {
  llm.reply({ text: ANSWER });
  socket.send({ type: 'text_input', text: 'Say something short' });
  let frame = await socket.next();
  while (frame.type !== 'llm_response' || frame.is_final === false) frame = await socket.next();
  expectAnswer(frame.content === ANSWER, frame, 'a turn');
  const idle = await socket.next();
  expectAnswer(idle?.type === 'status' && idle.status === 'idle', idle, 'the end of a turn');
}

/**
 * Figure `fleet_ops_budget_turn`: an LLM-gateway turn on a gateway whose tokens file gives the
 * principal and its devices budgets (so every turn runs the Redis check before the model call
 * and the charge after it) against the same gateway and Redis with no budgets.
 */
async function budgetTurn(redis: BenchRedis, llm: ScriptedLlm, dir: string, options: FleetOpsOptions): Promise<void> {
  const plain = join(dir, 'tokens-plain.json');
  const budgeted = join(dir, 'tokens-budgets.json');
  await writeFile(plain, JSON.stringify({ tokens: [OWNER] }));
  const budgets = { llm_tokens_per_month: 1e12, tts_chars_per_day: 1e12, per_device: { llm_tokens_per_day: 1e12, stt_seconds_per_day: 1e9 } };
  await writeFile(budgeted, JSON.stringify({ tokens: [{ ...OWNER, budgets }] }));
  const prefix = benchPrefix('fleet-ops-budget');
  const env = { LLM_BASE_URL: llm.baseUrl, LLM_MAX_RETRIES: '0', LOCATION_PROVIDER_URL: 'off' };
  try {
    const figure = await withGateways(
      { without: fleetGateway(plain, `${prefix}a:`, env), with: fleetGateway(budgeted, `${prefix}b:`, env) },
      async (servers) => {
        const sockets = { without: await llmDevice(servers.without, 'bench-budget-a'), with: await llmDevice(servers.with, 'bench-budget-b') };
        try {
          return await compare(
            redis,
            {
              without: { server: servers.without, operation: () => turn(sockets.without, llm) },
              with: { server: servers.with, operation: () => turn(sockets.with, llm) },
            },
            options,
          );
        } finally {
          sockets.without.close();
          sockets.with.close();
        }
      },
    );
    emit({ figure: 'fleet_ops_budget_turn', turns: options.rounds * options.perRound, ...figure });
  } finally {
    await redis.removeKeys(prefix);
  }
}

/**
 * Figure `fleet_ops_push_receipt`: `POST /devices/<id>/say` to an online LLM-gateway device, every
 * push with its receipt in Redis (created `queued`, moved `sent` then `spoken`), its whole cost;
 * beside it the receipt's own work, measured in this process on the same Redis: the three writes
 * a push makes, through the gateway's own `PushReceipts` and Redis store. Receipts cannot be
 * switched off, so the share of the push they take is the figure.
 */
async function pushReceipt(redis: BenchRedis, dir: string, options: FleetOpsOptions): Promise<void> {
  const tokens = join(dir, 'tokens-plain.json');
  await writeFile(tokens, JSON.stringify({ tokens: [OWNER] }));
  const prefix = benchPrefix('fleet-ops-push');
  try {
    const push = await withServer(fleetGateway(tokens, prefix), async (server) => {
      const device = await llmDevice(server, 'bench-push');
      const say = async () => {
        const response = await fetch(`http://127.0.0.1:${server.port}/devices/bench-push/say`, {
          method: 'POST',
          headers: { Authorization: `Bearer ${BENCH_TOKEN}`, 'Content-Type': 'application/json' },
          body: JSON.stringify({ text: ANSWER }),
        });
        const body = (await response.json()) as { push_id?: string };
        expectAnswer(response.ok && typeof body.push_id === 'string', body, 'a push');
        const spoken = await device.next();
        expectAnswer(spoken?.type === 'llm_response' && spoken.content === ANSWER, spoken, 'the pushed sentence');
        const idle = await device.next();
        expectAnswer(idle?.type === 'status' && idle.status === 'idle', idle, 'the end of a push');
      };
      try {
        const receipts = openReceipts(`${prefix}local:`);
        try {
          // The receipt work alone runs in this process: its CPU is this process's.
          const receiptWork = measuredInProcess(async () => {
            const id = `push-${randomUUID()}`;
            await receipts.open([{ id, device: 'bench-push', kind: 'say', by: 'bench' }]);
            await receipts.move(id, { state: 'sent' });
            await receipts.move(id, { state: 'spoken' });
          });
          return await compare(redis, { without: { server, operation: receiptWork.operation }, with: { server, operation: say } }, options).then((figure) => ({
            figure,
            receiptCpuUs: receiptWork.cpuUsPerOperation(),
          }));
        } finally {
          await receipts.onApplicationShutdown();
        }
      } finally {
        device.close();
      }
    });
    const { figure, receiptCpuUs } = push;
    emit({
      figure: 'fleet_ops_push_receipt',
      pushes: figure.with.operations,
      push: figure.with,
      receipt: { ...figure.without, cpu_us: receiptCpuUs, gateway_cpu_us: undefined },
      receipt_share: {
        cpu: ratio(receiptCpuUs, figure.with.gateway_cpu_us),
        redis_commands: ratio(figure.without.redis_commands, figure.with.redis_commands),
        redis_cpu: figure.with.redis_cpu_us && figure.without.redis_cpu_us !== null ? ratio(figure.without.redis_cpu_us, figure.with.redis_cpu_us) : null,
      },
    });
  } finally {
    await redis.removeKeys(prefix);
  }
}

/** The gateway's receipts on the bench's Redis, as `openPushReceipts` makes them with Redis. */
function openReceipts(prefix: string): PushReceipts {
  const client = new Redis(BENCH_REDIS_URL);
  return new PushReceipts(new RedisPushReceipts(client, prefix, { ttlMs: 60_000, max: 100_000 }), undefined, async () => void (await client.quit()));
}

/** An operation whose CPU is this process's own, summed over its calls. */
function measuredInProcess(work: () => Promise<void>): { operation: () => Promise<void>; cpuUsPerOperation: () => number } {
  let cpuUs = 0;
  let calls = 0;
  return {
    operation: async () => {
      const before = process.cpuUsage();
      await work();
      const used = process.cpuUsage(before);
      cpuUs += used.user + used.system;
      calls += 1;
    },
    cpuUsPerOperation: () => round(cpuUs / Math.max(calls, 1), 1),
  };
}

/** A board of the bench: a MAC address of its own. */
function board(index: number): BoardIdentity {
  const mac = ['02', 'b0', ...[index >> 16, (index >> 8) & 0xff, index & 0xff, 0x42].map((byte) => byte.toString(16).padStart(2, '0'))].join(':');
  return { deviceId: mac, clientId: randomUUID(), board: 'bread-compact-wifi', firmwareVersion: '2.4.2', language: 'zh-CN' };
}

/** `WebsocketProtocol::OpenAudioChannel`: connects with the firmware's headers, says hello, waits for the server's, then closes. */
async function connectAndHello(url: string, identity: BoardIdentity, token: string): Promise<void> {
  const socket = new WebSocket(url, {
    headers: { Authorization: `Bearer ${token}`, 'Protocol-Version': '1', 'Device-Id': identity.deviceId, 'Client-Id': identity.clientId },
    perMessageDeflate: false,
  });
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('No server hello within 10 s')), 10_000);
      socket.once('error', reject);
      socket.once('unexpected-response', (_request, response) => reject(new Error(`The upgrade was refused: ${response.statusCode}`)));
      socket.once('open', () =>
        socket.send(helloMessage({ version: 1, serverAec: false, mcp: true, textFont: null, sampleRate: 16_000, frameDurationMs: 60 })),
      );
      socket.on('message', (data) => {
        if (JSON.parse(String(data))?.type !== 'hello') return;
        clearTimeout(timer);
        resolve();
      });
    });
  } finally {
    socket.close();
    await new Promise((resolve) => socket.once('close', resolve));
  }
}

/**
 * Figure `fleet_ops_connect`: what a xiaozhi device's boot costs (its configuration request, the
 * WebSocket upgrade and the hello) when it is bound by activation and connects with its own
 * `dev_` secret (looked up by hash in Redis, its owner checked), against the same with the
 * shared static device token and activation off, on the same Redis.
 */
async function connect(redis: BenchRedis, dir: string, options: FleetOpsOptions): Promise<void> {
  const tokens = join(dir, 'tokens-plain.json');
  await writeFile(tokens, JSON.stringify({ tokens: [OWNER] }));
  const prefix = benchPrefix('fleet-ops-connect');
  const shared = { XIAOZHI_DEVICE_TOKEN: BENCH_TOKEN, LOCATION_PROVIDER_URL: 'off' };
  const activation = {
    XIAOZHI_ACTIVATION: 'required',
    XIAOZHI_ACTIVATION_CODES_PER_ADDRESS: '100000',
    XIAOZHI_ACTIVATION_ATTEMPTS_PER_ADDRESS: '100000',
    XIAOZHI_ACTIVATION_ATTEMPTS_PER_PRINCIPAL: '100000',
    XIAOZHI_ACTIVATION_ATTEMPTS_GLOBAL: '100000',
  };
  try {
    const figure = await withGateways(
      { without: fleetGateway(tokens, `${prefix}a:`, shared), with: fleetGateway(tokens, `${prefix}b:`, { ...shared, ...activation }) },
      async (servers) => {
        const origin = (server: ServerProcess) => `http://127.0.0.1:${server.port}`;
        const boot = async (server: ServerProcess, identity: BoardIdentity, secret?: string) => {
          const answer = await requestOta(`${origin(server)}/xiaozhi/ota/`, 'POST', identity);
          expectAnswer(answer.status === 200 && typeof answer.body?.websocket?.url === 'string', answer.body, 'a configuration answer');
          const token = secret ?? answer.body.websocket.token;
          expectAnswer(typeof token === 'string', answer.body, 'a token to connect with');
          await connectAndHello(answer.body.websocket.url, identity, token);
        };
        // Every device bound once, its secret kept, as the firmware keeps it.
        const bound: { identity: BoardIdentity; secret: string }[] = [];
        for (let index = 0; index < options.boundDevices; index++) {
          const identity = board(index);
          const first = await requestOta(`${origin(servers.with)}/xiaozhi/ota/`, 'POST', identity);
          const code = first.body?.activation?.code;
          const bind = await fetch(`${origin(servers.with)}/devices/activate`, {
            method: 'POST',
            headers: { Authorization: `Bearer ${BENCH_TOKEN}`, 'Content-Type': 'application/json' },
            body: JSON.stringify({ code }),
          });
          expectAnswer(bind.ok, await bind.json(), 'an activation');
          const issued = await requestOta(`${origin(servers.with)}/xiaozhi/ota/`, 'POST', identity);
          expectAnswer(/^dev_/.test(issued.body?.websocket?.token ?? ''), issued.body, "a bound device's secret");
          bound.push({ identity, secret: issued.body.websocket.token });
        }
        const unbound = bound.map((_, index) => board(100_000 + index));
        let next = 0;
        return compare(
          redis,
          {
            without: { server: servers.without, operation: () => boot(servers.without, unbound[next++ % unbound.length]) },
            with: {
              server: servers.with,
              operation: () => {
                const device = bound[next++ % bound.length];
                return boot(servers.with, device.identity, device.secret);
              },
            },
          },
          options,
        );
      },
    );
    emit({ figure: 'fleet_ops_connect', connects: options.rounds * options.perRound, bound_devices: options.boundDevices, ...figure });
  } finally {
    await redis.removeKeys(prefix);
  }
}

/**
 * What fleet operations (issue 35) add to a device's life, each beside the same gateway build
 * without it in the same run: budgets to an LLM turn, a delivery receipt to a push, activation
 * and a device's own secret to its boot. Every figure is CPU per operation on the gateway, Redis
 * commands and CPU per operation, and latency, never a timed target.
 */
export async function benchFleetOps(options: FleetOpsOptions): Promise<void> {
  const redis = await BenchRedis.open();
  const llm = await ScriptedLlm.start();
  const dir = await mkdtemp(join(tmpdir(), 'bench-fleet-ops-'));
  try {
    await budgetTurn(redis, llm, dir, options);
    await pushReceipt(redis, dir, options);
    await connect(redis, dir, options);
  } finally {
    await rm(dir, { recursive: true, force: true });
    await llm.close();
    await redis.close();
  }
}
