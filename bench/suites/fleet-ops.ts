import { randomUUID } from 'crypto';
import { mkdtemp, rm, writeFile } from 'fs/promises';
import { loadavg, tmpdir } from 'os';
import { join } from 'path';
import { WebSocket } from 'ws';
import { ScriptedLlm } from '../../test/support/scripted-llm';
import { BenchRedis, BENCH_REDIS_URL, benchPrefix, commandsPer, RedisCommandReading } from '../support/bench-redis';
import { BENCH_BUILD, ServerProcess, ServerSpec } from '../support/processes';
import { CpuReading, cpuNow } from '../support/server-cpu';
import { BENCH_TOKEN, gatewayServer } from '../support/servers';
import { elapsedMs, emit, ratio, round, summarise } from '../support/stats';
import { configurationOf, DEVICE_HELLO, FRAME_MS, sessionHeaders } from '../support/xiaozhi-firmware';
import { arm, connectDevice, gatewayTurn, TURN_TIMEOUT_MS, TURNS, within } from './llm-turn';
import { withServer } from './tool-calls';

/** Each figure: `warmup` operations per side untimed, then `count` per side measured one after another (one in flight). */
export interface OpsBounds {
  warmup: number;
  count: number;
  /** Blocks per side the count is measured in, the sides taken in turn. */
  rounds: number;
}

export interface FleetOpsOptions {
  /** Plain LLM turns, on the gateway without budgets and with them. */
  turns: OpsBounds;
  /** `POST /devices/<id>/say` to one online LLM-gateway device, on the gateway and on the bare fleet server. */
  pushes: OpsBounds;
  /** A xiaozhi device's boot (configuration request, WebSocket, hello), with a device secret and with the static token. */
  connects: OpsBounds;
  /** Quiet milliseconds before each measurement, to read the Redis commands nobody's operation makes. */
  idleMs: number;
}

const AUTH = { Authorization: `Bearer ${BENCH_TOKEN}` };
const JSON_AUTH = { ...AUTH, 'content-type': 'application/json' };
/** Waited after each measured block, before its readings. */
const BLOCK_SETTLE_MS = 100;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** What one server did over `count` operations: latency, its CPU per operation (read from outside), and Redis's commands per operation. */
interface OpsFigures {
  count: number;
  p50_ms: number;
  p99_ms: number;
  server_cpu_us_per_op: number;
  redis_cpu_us_per_op: number | null;
  /** Commands Redis executed per operation, those run inside a script included. */
  redis_commands_per_op: number;
  /** The `eval` and `evalsha` among them. */
  redis_scripts_per_op: number;
  redis_by_command_per_op: Record<string, number>;
}

/** One side of a figure: the server measured, and the operation repeated on it. */
interface Side {
  server: ServerProcess;
  operation: () => Promise<void>;
}

/** What one side has measured so far, over its blocks. */
class SideTally {
  readonly latenciesMs: number[] = [];
  serverCpu = 0;
  redisCpu: number | undefined = 0;
  readonly commands: RedisCommandReading = { total: 0, calls: {} };

  add(before: CpuReading, after: CpuReading, commandsBefore: RedisCommandReading, commandsAfter: RedisCommandReading): void {
    this.serverCpu += after.servers[0] - before.servers[0];
    this.redisCpu =
      this.redisCpu === undefined || before.redis === undefined || after.redis === undefined ? undefined : this.redisCpu + after.redis - before.redis;
    this.commands.total += commandsAfter.total - commandsBefore.total;
    for (const [name, calls] of Object.entries(commandsAfter.calls))
      this.commands.calls[name] = (this.commands.calls[name] ?? 0) + calls - (commandsBefore.calls[name] ?? 0);
  }

  figures(): OpsFigures {
    const count = this.latenciesMs.length;
    const latency = summarise(this.latenciesMs);
    const commands = commandsPer({ total: 0, calls: {} }, this.commands, count);
    return {
      count,
      p50_ms: latency.p50_ms,
      p99_ms: latency.p99_ms,
      server_cpu_us_per_op: round(this.serverCpu / count, 1),
      redis_cpu_us_per_op: this.redisCpu === undefined ? null : round(this.redisCpu / count, 1),
      redis_commands_per_op: commands.commands,
      redis_scripts_per_op: commands.scripts,
      redis_by_command_per_op: commands.by_command,
    };
  }
}

/**
 * Both sides' servers up together: each side's operation `bounds.warmup` times untimed; `idleMs`
 * with nothing running, Redis's commands read (the servers' own timers, or anyone else on that
 * Redis); then `bounds.count` operations per side, one at a time, in `bounds.rounds` blocks
 * taken in turn (the order rotating each round), so that a machine whose load changes weighs on
 * both alike. Around each block (and `BLOCK_SETTLE_MS` after it, for the work its last operation
 * leaves), its server's CPU and Redis's (from `/proc`) and Redis's commands.
 */
async function measureSides(sides: Side[], redis: BenchRedis, bounds: OpsBounds, idleMs: number): Promise<{ figures: OpsFigures[]; idleCommandsPerS: number }> {
  for (const side of sides) for (let index = 0; index < bounds.warmup; index++) await side.operation();
  const idleStart = process.hrtime.bigint();
  const idleBefore = await redis.commands();
  await sleep(idleMs);
  const idleCommands = commandsPer(idleBefore, await redis.commands(), 1).commands;
  const idleCommandsPerS = round(idleCommands / (elapsedMs(idleStart) / 1000), 1);
  const tallies = sides.map(() => new SideTally());
  const perBlock = Math.ceil(bounds.count / bounds.rounds);
  for (let roundIndex = 0; roundIndex < bounds.rounds; roundIndex++) {
    for (let step = 0; step < sides.length; step++) {
      const index = (roundIndex + step) % sides.length;
      const { server, operation } = sides[index];
      const tally = tallies[index];
      const operations = Math.min(perBlock, bounds.count - tally.latenciesMs.length);
      const cpuBefore = cpuNow([server], redis);
      const commandsBefore = await redis.commands();
      for (let count = 0; count < operations; count++) {
        const start = process.hrtime.bigint();
        await operation();
        tally.latenciesMs.push(elapsedMs(start));
      }
      // What the block's last operation leaves to do (a receipt's last move, a closed connection's cleanup) is the block's.
      await sleep(BLOCK_SETTLE_MS);
      const commandsAfter = await redis.commands();
      tally.add(cpuBefore, cpuNow([server], redis), commandsBefore, commandsAfter);
    }
  }
  return { figures: tallies.map((tally) => tally.figures()), idleCommandsPerS };
}

/** The ratios of a figure: measured to baseline, latency and CPU. */
const ratios = (measured: OpsFigures, baseline: OpsFigures) => ({
  p50: ratio(measured.p50_ms, baseline.p50_ms),
  p99: ratio(measured.p99_ms, baseline.p99_ms),
  cpu_per_op: ratio(measured.server_cpu_us_per_op, baseline.server_cpu_us_per_op),
  // null where the baseline makes no Redis command at all.
  redis_commands_per_op: baseline.redis_commands_per_op > 0 ? ratio(measured.redis_commands_per_op, baseline.redis_commands_per_op) : null,
});

/** What `measured` adds to `baseline`, per operation. */
const adds = (measured: OpsFigures, baseline: OpsFigures) => ({
  p50_ms: round(measured.p50_ms - baseline.p50_ms),
  p99_ms: round(measured.p99_ms - baseline.p99_ms),
  server_cpu_us_per_op: round(measured.server_cpu_us_per_op - baseline.server_cpu_us_per_op, 1),
  redis_commands_per_op: round(measured.redis_commands_per_op - baseline.redis_commands_per_op, 2),
});

/** A gateway on the bench's Redis under a key prefix of its own. */
const onRedis = (prefix: string, env: Record<string, string>) => (port: number) =>
  gatewayServer(port, { REDIS_URL: BENCH_REDIS_URL, REDIS_KEY_PREFIX: prefix, ...env });

async function getJson(port: number, path: string): Promise<{ status: number; body: any }> {
  const response = await fetch(`http://127.0.0.1:${port}${path}`, { headers: AUTH, signal: AbortSignal.timeout(TURN_TIMEOUT_MS) });
  return { status: response.status, body: await response.json().catch(() => undefined) };
}

async function postJson(port: number, path: string, body: unknown): Promise<{ status: number; body: any }> {
  const response = await fetch(`http://127.0.0.1:${port}${path}`, {
    method: 'POST',
    headers: JSON_AUTH,
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(TURN_TIMEOUT_MS),
  });
  return { status: response.status, body: await response.json().catch(() => undefined) };
}

// ---------------------------------------------------------------------------------------------
// 1. A budget check per turn

const BUDGET_DEVICE = 'bench-budget-device';
/** Far more than the run can spend: every turn is checked, none refused. */
const LARGE = 1_000_000_000;
const tokensFile = (budgets: boolean) =>
  `tokens:\n  - name: bench\n    token: "${BENCH_TOKEN}"\n` +
  (budgets
    ? `    budgets:\n      llm_tokens_per_day: ${LARGE}\n      llm_tokens_per_month: ${LARGE}\n      per_device:\n        llm_tokens_per_day: ${LARGE}\n        llm_tokens_per_month: ${LARGE}\n`
    : '');

/**
 * The plain turn of `llm-turn` (text in, the scripted model's answer out) on one device
 * connection naming itself, on a gateway whose tokens file gives the bench token no budgets, then
 * on the same gateway whose tokens file gives it budgets of `llm_tokens` for all its devices and
 * per device. Both on Redis: usage is counted with or without limits (the reservation, the charge
 * and the release run every turn either way), so the difference is what the limits add: reading
 * them and checking each counter against them in the same script.
 */
async function budgetTurn(redis: BenchRedis, options: FleetOpsOptions): Promise<void> {
  const llm = await ScriptedLlm.start();
  const scratch = await mkdtemp(join(tmpdir(), 'bench-fleet-ops-'));
  const prefixes = [benchPrefix('ops-nobudget'), benchPrefix('ops-budget')];
  const [plain] = TURNS;
  try {
    const spec = async (budgets: boolean, prefix: string) => {
      const file = join(scratch, budgets ? 'budgets.yaml' : 'plain.yaml');
      await writeFile(file, tokensFile(budgets), { mode: 0o600 });
      return onRedis(prefix, {
        LLM_BASE_URL: llm.baseUrl,
        // One retry: a side idles while the other's block runs, about as long as the scripted server keeps an
        // idle connection (5 s), and a request on a connection it closes at that moment must not end the run.
        LLM_MAX_RETRIES: '1',
        LLM_TIMEOUT: String(TURN_TIMEOUT_MS / 1000),
        LOCATION_PROVIDER_URL: 'off',
        AUTH_TOKENS: '',
        AUTH_TOKENS_FILE: file,
      });
    };
    /** The device's `llm_tokens` of the day, checked to show the turns and the limit the side should have. */
    const usedBy = async (server: ServerProcess, budgets: boolean): Promise<number> => {
      const usage = await getJson(server.port, `/devices/${BUDGET_DEVICE}/usage`);
      const day = usage.body?.usage?.llm_tokens?.day;
      if (usage.status !== 200 || !(day?.used > 0) || day.limit !== (budgets ? LARGE : null))
        throw new Error(`fleet-ops: the device's usage does not show the turns (budgets ${budgets}): ${JSON.stringify(usage)}`);
      return day.used;
    };
    const [withoutSpec, withSpec] = [await spec(false, prefixes[0]), await spec(true, prefixes[1])];
    const measured = await withServer(withoutSpec, (without) =>
      withServer(withSpec, async (withBudgets) => {
        const servers = [without, withBudgets];
        const sockets = await Promise.all(servers.map((server) => connectDevice(server, { 'Device-Id': BUDGET_DEVICE })));
        try {
          const sides = servers.map((server, index) => ({
            server,
            operation: async () => {
              arm(llm);
              await within(gatewayTurn(sockets[index], plain), TURN_TIMEOUT_MS, 'A plain turn');
            },
          }));
          const { figures, idleCommandsPerS } = await measureSides(sides, redis, options.turns, options.idleMs);
          return { figures, idleCommandsPerS, used: [await usedBy(without, false), await usedBy(withBudgets, true)] };
        } finally {
          sockets.forEach((socket) => socket.close());
        }
      }),
    );
    const [baseline, budgeted] = measured.figures.map((figures, index) => ({ figures, used: measured.used[index] }));
    emit({
      figure: 'fleet_ops_budget_turn',
      load_avg_1m: round(loadavg()[0], 2),
      turn: plain.name,
      turns: options.turns.count,
      rounds: options.turns.rounds,
      redis: 'REDIS_URL set on both',
      redis_idle_commands_per_s: measured.idleCommandsPerS,
      baseline_name: 'the same gateway, its tokens file giving the token no budgets (usage still counted)',
      budgets: {
        principal: { llm_tokens_per_day: LARGE, llm_tokens_per_month: LARGE },
        per_device: { llm_tokens_per_day: LARGE, llm_tokens_per_month: LARGE },
      },
      gateway: budgeted.figures,
      baseline: baseline.figures,
      llm_tokens_counted: { gateway: budgeted.used, baseline: baseline.used },
      budgets_add: adds(budgeted.figures, baseline.figures),
      ratio: ratios(budgeted.figures, baseline.figures),
    });
  } finally {
    await Promise.all(prefixes.map((prefix) => redis.removeKeys(prefix))).catch(() => undefined);
    await rm(scratch, { recursive: true, force: true });
    await llm.close();
  }
}

// ---------------------------------------------------------------------------------------------
// 2. A push and its delivery receipt

const PUSH_DEVICE = 'bench-push-device';
const PUSH_TEXT = 'Dinner is ready.';

/** An LLM-gateway device at `/` naming itself, counting the pushed sentences it hears. */
async function openPushDevice(port: number): Promise<{ heard(): number; close(): void }> {
  const socket = new WebSocket(`ws://127.0.0.1:${port}/`, { headers: { ...AUTH, 'Device-Id': PUSH_DEVICE }, perMessageDeflate: false });
  let heard = 0;
  await new Promise<void>((resolve, reject) => {
    socket.once('message', () => resolve());
    socket.once('error', reject);
    socket.once('unexpected-response', (_request, response) => reject(new Error(`fleet-ops: the push device was refused: HTTP ${response.statusCode}`)));
  });
  socket.on('message', (data: Buffer) => {
    const frame = JSON.parse(data.toString());
    if (frame.type === 'llm_response' && frame.content === PUSH_TEXT) heard++;
  });
  return { heard: () => heard, close: () => socket.terminate() };
}

/** Until the server's directory lists the push device. */
async function listed(port: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  while ((await getJson(port, `/devices/${PUSH_DEVICE}`)).status !== 200) {
    if (Date.now() > deadline) throw new Error('fleet-ops: the push device was not listed within 10 s');
    await sleep(50);
  }
}

/** A push to the device through `server`, checked; the push's id (the bare fleet's is made up, and unused). */
async function push(server: ServerProcess): Promise<string | undefined> {
  const answer = await postJson(server.port, `/devices/${PUSH_DEVICE}/say`, { text: PUSH_TEXT });
  if (answer.status !== 200 || answer.body?.delivered !== 'spoken')
    throw new Error(`fleet-ops: a push through ${server.name} was answered ${answer.status}: ${JSON.stringify(answer.body)}`);
  return answer.body.push_id;
}

/** The bare fleet server (servers/bare-fleet-server.ts) on the same Redis: the same route, no receipt. */
const bareFleet = (prefix: string) => (): ServerSpec => ({
  name: 'bare fleet',
  args: [join(BENCH_BUILD, 'servers', 'bare-fleet-server.js')],
  env: { BENCH_TOKEN, REDIS_URL: BENCH_REDIS_URL, REDIS_KEY_PREFIX: prefix },
});

/**
 * `POST /devices/<id>/say {"text"}` to one LLM-gateway device online on the instance taking the
 * request, answered once the device was sent the sentence (`delivered: "spoken"`), one push at
 * a time. The gateway writes the push's receipt in Redis (queued, sent, spoken: state moves
 * checked by a script). Receipts cannot be switched off, so the baseline is the bare fleet
 * server's same route on the same Redis, which writes none (nor validates, limits, audits).
 * `receipt` reads the scripts per push apart, and the last push's receipt.
 */
async function pushReceipt(redis: BenchRedis, options: FleetOpsOptions): Promise<void> {
  const prefixes = [benchPrefix('ops-push'), benchPrefix('ops-bare-push')];
  try {
    const measured = await withServer(onRedis(prefixes[0], {}), (gateway) =>
      withServer(bareFleet(prefixes[1]), async (bare) => {
        const servers = [gateway, bare];
        const devices = await Promise.all(servers.map((server) => openPushDevice(server.port)));
        try {
          for (const server of servers) await listed(server.port);
          let lastPushId: string | undefined;
          const sides = [
            { server: gateway, operation: async () => void (lastPushId = await push(gateway)) },
            { server: bare, operation: async () => void (await push(bare)) },
          ];
          const { figures, idleCommandsPerS } = await measureSides(sides, redis, options.pushes, options.idleMs);
          const pushes = options.pushes.warmup + options.pushes.count;
          const deadline = Date.now() + 10_000;
          while (devices.some((device) => device.heard() < pushes) && Date.now() < deadline) await sleep(20);
          devices.forEach((device, index) => {
            if (device.heard() !== pushes) throw new Error(`fleet-ops: the device on ${servers[index].name} heard ${device.heard()} of ${pushes} pushes`);
          });
          const receipt = await getJson(gateway.port, `/pushes/${lastPushId}`);
          if (receipt.status !== 200) throw new Error(`fleet-ops: the last push's receipt was answered ${receipt.status}: ${JSON.stringify(receipt.body)}`);
          return { figures, idleCommandsPerS, receipt: receipt.body as { state: string; history: { state: string }[] } };
        } finally {
          devices.forEach((device) => device.close());
        }
      }),
    );
    const [gateway, baseline] = measured.figures;
    emit({
      figure: 'fleet_ops_push_receipt',
      load_avg_1m: round(loadavg()[0], 2),
      pushes: options.pushes.count,
      rounds: options.pushes.rounds,
      device: 'LLM gateway (/ with Device-Id), online on the instance taking the request',
      baseline_name: 'bare fleet server (bench/servers/bare-fleet-server.ts): the same POST /devices/<id>/say on the same Redis, no receipt',
      redis_idle_commands_per_s: measured.idleCommandsPerS,
      gateway,
      baseline,
      // The receipt store's scripts are sent as EVAL (every other script of the gateway is an EVALSHA).
      receipt: {
        scripts_per_push: gateway.redis_scripts_per_op,
        eval_per_push: gateway.redis_by_command_per_op.eval ?? 0,
        evalsha_per_push: gateway.redis_by_command_per_op.evalsha ?? 0,
        last_state: measured.receipt.state,
        last_history: measured.receipt.history.map((step) => step.state),
      },
      gateway_adds: adds(gateway, baseline),
      ratio: ratios(gateway, baseline),
    });
  } finally {
    await Promise.all(prefixes.map((prefix) => redis.removeKeys(prefix))).catch(() => undefined);
  }
}

// ---------------------------------------------------------------------------------------------
// 3. A xiaozhi device's connection: its own secret, or the static token

/** A xiaozhi device as the firmware is: one id and client id, the token it stored from a configuration answer. */
interface BootingDevice {
  id: string;
  clientId: string;
  token?: string;
}

/**
 * One boot: the configuration request, the WebSocket it names with the stored (or newly given)
 * token, the hello and the server's; then the connection is dropped and its close awaited.
 */
async function boot(port: number, device: BootingDevice): Promise<void> {
  const config = await configurationOf(`http://127.0.0.1:${port}`, device.id, device.clientId);
  if (config.websocket?.token) device.token = config.websocket.token;
  const url = config.websocket?.url;
  if (!url || !device.token) throw new Error(`fleet-ops: the configuration answer gives no session: ${JSON.stringify(config).slice(0, 300)}`);
  const socket = new WebSocket(url, { headers: sessionHeaders(device.token, device.id, device.clientId), perMessageDeflate: false });
  try {
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => socket.send(DEVICE_HELLO));
      socket.once('message', (data: Buffer, binary: boolean) => {
        const message = binary ? undefined : JSON.parse(data.toString());
        if (message?.type === 'hello' && message.audio_params?.frame_duration === FRAME_MS) resolve();
        else reject(new Error(`fleet-ops: expected the server's hello, got ${binary ? 'audio' : data.toString().slice(0, 300)}`));
      });
      socket.once('error', reject);
      socket.once('unexpected-response', (_request, answer) => reject(new Error(`fleet-ops: ${url} refused the upgrade: HTTP ${answer.statusCode}`)));
      socket.once('close', (code) => reject(new Error(`fleet-ops: the connection closed (${code}) before the server's hello`)));
    });
  } finally {
    const closed = new Promise((resolve) => socket.once('close', resolve));
    socket.close();
    await closed;
  }
}

/** The xiaozhi gateway on Redis; no speech or model is reached by a boot. */
const xiaozhiGateway = (prefix: string, env: Record<string, string>) =>
  onRedis(prefix, {
    XIAOZHI_DEVICE_TOKEN: BENCH_TOKEN,
    STT_BASE_URL: 'http://127.0.0.1:9/v1/',
    TTS_BASE_URL: 'http://127.0.0.1:9/v1/',
    LOCATION_PROVIDER_URL: 'off',
    ...env,
  });

/** Binds `device` to the bench token as its owner does (`POST /devices/activate {code}`), and takes its secret from the next answer. */
async function activate(port: number, device: BootingDevice): Promise<void> {
  const baseUrl = `http://127.0.0.1:${port}`;
  const first = await configurationOf(baseUrl, device.id, device.clientId);
  const code = first.activation?.code;
  if (!code || first.websocket) throw new Error(`fleet-ops: an unbound device was not given a code alone: ${JSON.stringify(first).slice(0, 300)}`);
  const bound = await postJson(port, '/devices/activate', { code });
  if (bound.status !== 200 || bound.body?.device !== device.id)
    throw new Error(`fleet-ops: binding was answered ${bound.status}: ${JSON.stringify(bound.body)}`);
  const issued = await configurationOf(baseUrl, device.id, device.clientId);
  if (!issued.websocket?.token?.startsWith('dev_')) throw new Error(`fleet-ops: the bound device got no secret: ${JSON.stringify(issued).slice(0, 300)}`);
  device.token = issued.websocket.token;
}

/** A fresh locally administered MAC. */
const mac = () => ['02', ...randomUUID().replaceAll('-', '').slice(0, 10).match(/../g)!].join(':');

/**
 * A xiaozhi device booting again and again, one boot at a time (the configuration request
 * `POST /xiaozhi/ota/`, the WebSocket, its hello and the server's; then it drops the connection):
 * with `XIAOZHI_ACTIVATION=required`, bound to the bench token first and connecting with its
 * `dev_` secret, beside the same gateway with activation off, where the answer hands it the
 * static `XIAOZHI_DEVICE_TOKEN` (also in `AUTH_TOKENS`). Both on Redis.
 */
async function activationConnect(redis: BenchRedis, options: FleetOpsOptions): Promise<void> {
  const prefixes = [benchPrefix('ops-static'), benchPrefix('ops-activation')];
  try {
    const spec = (activation: boolean, prefix: string) => xiaozhiGateway(prefix, { XIAOZHI_ACTIVATION: activation ? 'required' : 'off' });
    const measured = await withServer(spec(false, prefixes[0]), (staticServer) =>
      withServer(spec(true, prefixes[1]), async (activationServer) => {
        const devices: BootingDevice[] = [0, 1].map(() => ({ id: mac(), clientId: randomUUID() }));
        await activate(activationServer.port, devices[1]);
        const sides = [staticServer, activationServer].map((server, index) => ({ server, operation: () => boot(server.port, devices[index]) }));
        const { figures, idleCommandsPerS } = await measureSides(sides, redis, options.connects, options.idleMs);
        if (devices[0].token !== BENCH_TOKEN || !devices[1].token?.startsWith('dev_'))
          throw new Error('fleet-ops: the devices did not connect with the tokens they should');
        return { figures, idleCommandsPerS };
      }),
    );
    const [baseline, activated] = measured.figures;
    emit({
      figure: 'fleet_ops_connect',
      load_avg_1m: round(loadavg()[0], 2),
      connects: options.connects.count,
      rounds: options.connects.rounds,
      steps: 'POST /xiaozhi/ota/, WebSocket /xiaozhi/v1/, hello and the server hello; then the device drops the connection',
      redis: 'REDIS_URL set on both',
      redis_idle_commands_per_s: measured.idleCommandsPerS,
      gateway: { name: 'XIAOZHI_ACTIVATION=required, bound device, its dev_ secret', ...activated },
      baseline: { name: 'XIAOZHI_ACTIVATION=off, the static XIAOZHI_DEVICE_TOKEN (in AUTH_TOKENS)', ...baseline },
      activation_adds: adds(activated, baseline),
      ratio: ratios(activated, baseline),
    });
  } finally {
    await Promise.all(prefixes.map((prefix) => redis.removeKeys(prefix))).catch(() => undefined);
  }
}

// ---------------------------------------------------------------------------------------------

/**
 * What fleet operations add to a device's work (BENCHMARKS.md): a budget check per LLM turn,
 * a push's delivery receipt, and a device connecting with a secret of its own after activation.
 * Each beside its baseline in the same run, one server process at a time on the bench's Redis;
 * CPU per operation (the server's, read from `/proc`), Redis commands per operation.
 */
export async function benchFleetOps(options: FleetOpsOptions): Promise<void> {
  const redis = await BenchRedis.open();
  try {
    await budgetTurn(redis, options);
    await pushReceipt(redis, options);
    await activationConnect(redis, options);
  } finally {
    redis.close();
  }
}
