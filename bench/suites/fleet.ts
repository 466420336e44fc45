import { readFileSync } from 'fs';
import { Agent, request as httpRequest } from 'http';
import { join } from 'path';
import { WebSocket } from 'ws';
import { BenchRedis, BENCH_REDIS_URL, benchPrefix } from '../support/bench-redis';
import { LoopBounds, runClosedLoop } from '../support/closed-loop';
import { DeviceSwarm, monotonicMs, withSwarms } from '../support/device-swarm';
import { expectAnswer, FrameSocket } from '../support/frame-socket';
import { BENCH_BUILD, freePort, ServerProcess, ServerSpec, startServer } from '../support/processes';
import { BENCH_TOKEN, bareWsServer, gatewayServer } from '../support/servers';
import { CpuReading, cpuNow, cpuPer } from '../support/server-cpu';
import { emit, ratio, round, summarise } from '../support/stats';
import { withServer } from './tool-calls';

export interface FleetOptions {
  /**
   * An agent's call of a device tool: closed-loop agents per measurement; each way of calling is
   * warmed up for `bounds.warmupMs`, then measured for `bounds.durationMs` in `rounds` blocks.
   */
  calls: { connections: number[]; bounds: LoopBounds; rounds: number };
  /**
   * One `say` to each of `devices` devices, half on each of two instances, two ways: a request per
   * device, `concurrency` in flight, and one request naming them all (`POST /devices/say`);
   * `warmup` pushes first, untimed; `rounds` rounds per pair and way, the median reported.
   */
  fanout: { devices: number; concurrency: number; warmup: number; rounds: number };
  /**
   * Idle devices on one instance; as many as the machine's file-descriptor limit allows when that
   * is fewer. Each server settles `settleMs` before its memory is read, and again after connecting.
   */
  idle: { devices: number; settleMs: number };
}

const AUTH = { Authorization: `Bearer ${BENCH_TOKEN}` };

/** The device of the tool-call figure, its tool, and the name agents call it by (`<device>__<tool>`). */
const DEVICE = 'bench-lamp-1';
const LIGHT_TOOL = {
  name: 'light_on',
  description: 'Turns the light on or off',
  parameters: { type: 'object', properties: { on: { type: 'boolean', description: 'Whether the light is on' } }, required: ['on'] },
};
const AGENT_TOOL = `${DEVICE}__${LIGHT_TOOL.name}`;
const LIGHT_RESULT = JSON.stringify({ on: true });

const PUSH_TEXT = 'Dinner is ready.';
const WARMUP_TEXT = 'Warming up.';

/** Longest a phase (connecting a swarm, a fan-out's answers and arrivals, a directory catching up) may take. */
const PHASE_TIMEOUT_MS = 120_000;
/** Longest one push's HTTP answer may take. */
const REQUEST_TIMEOUT_MS = 15_000;
/** Connects in flight per swarm: two swarms make the idle suite's 100. */
const CONNECT_CONCURRENCY = 50;
/** Sockets from one source address (127.0.0.x): well inside the ephemeral port range of one address. */
const SOCKETS_PER_ADDRESS = 10_000;
/** The fan-out's devices come from 127.0.0.<this> (the gateway's pair) and the next address (the baseline's). */
const FANOUT_SOURCE_ADDRESS = 20;
/** File descriptors a process keeps for itself besides its sockets (listeners, pipes, Redis, libuv). */
const FD_RESERVE = 500;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * `BENCH_CPU_PROF_DIR`: every gateway the suite starts writes a V8 CPU profile there when it stops
 * (`node --cpu-prof`), to see where a figure's time goes.
 */
function profiled(spec: ServerSpec): ServerSpec {
  const dir = process.env.BENCH_CPU_PROF_DIR;
  return dir ? { ...spec, args: ['--cpu-prof', `--cpu-prof-dir=${dir}`, ...spec.args] } : spec;
}

/** The gateway with the connection caps raised for `maxConnections` LLM-gateway sockets. */
const gatewayFor =
  (maxConnections: number, env: Record<string, string> = {}) =>
  (port: number) =>
    profiled(gatewayServer(port, { CLOUD_MAX_CONNECTIONS: String(maxConnections), WS_MAX_CONNECTIONS: String(Math.max(100_000, maxConnections)), ...env }));

/** A gateway of the fleet: Redis for the directory and the instances' messages, a key prefix of the run's own. */
const fleetGateway = (prefix: string, maxConnections: number) => gatewayFor(maxConnections, { REDIS_URL: BENCH_REDIS_URL, REDIS_KEY_PREFIX: prefix });

/** The baseline instance (servers/bare-fleet-server.ts) on the same Redis. */
const bareFleet = (prefix: string) => (): ServerSpec => ({
  name: 'bare fleet',
  args: [join(BENCH_BUILD, 'servers', 'bare-fleet-server.js')],
  env: { BENCH_TOKEN, REDIS_URL: BENCH_REDIS_URL, REDIS_KEY_PREFIX: prefix },
});

/** Starts the servers together, runs `body`, and stops them all whatever happens. */
async function withServers<T>(specs: ((port: number) => ServerSpec)[], body: (servers: ServerProcess[]) => Promise<T>): Promise<T> {
  const ports: number[] = [];
  for (let index = 0; index < specs.length; index++) {
    let port = await freePort();
    while (ports.includes(port)) port = await freePort();
    ports.push(port);
  }
  const started = await Promise.allSettled(specs.map((spec, index) => startServer(spec(ports[index]), ports[index])));
  const servers = started.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
  try {
    const failed = started.find((result) => result.status === 'rejected');
    if (failed) throw (failed as PromiseRejectedResult).reason;
    return await body(servers);
  } finally {
    await Promise.all(servers.map((server) => server.stop()));
  }
}

/** Polls `check` until it holds; fails naming `what` after `timeoutMs`. */
async function waitFor(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`fleet: ${what} within ${timeoutMs / 1000} s`);
    await sleep(100);
  }
}

async function getJson(port: number, path: string): Promise<{ status: number; body: any }> {
  const response = await fetch(`http://127.0.0.1:${port}${path}`, { headers: AUTH });
  return { status: response.status, body: await response.json().catch(() => undefined) };
}

async function postJson(port: number, path: string, body: unknown): Promise<{ status: number; body: any }> {
  const response = await fetch(`http://127.0.0.1:${port}${path}`, {
    method: 'POST',
    headers: { ...AUTH, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(PHASE_TIMEOUT_MS),
  });
  return { status: response.status, body: await response.json().catch(() => undefined) };
}

// ---------------------------------------------------------------------------------------------
// An agent's call of a device tool

/**
 * The device of the tool-call figure, in the bench process: connects naming itself, registers
 * `light_on`, and answers every `tool_callback` at once with `{"on": <the argument>}`.
 */
async function openToolDevice(port: number): Promise<WebSocket> {
  const socket = new WebSocket(`ws://127.0.0.1:${port}/`, { headers: { ...AUTH, 'Device-Id': DEVICE }, perMessageDeflate: false });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('fleet: the tool device was not greeted and registered in time')), 10_000);
    let greeted = false;
    socket.on('message', (data: Buffer) => {
      const frame = JSON.parse(data.toString());
      if (frame.type === 'tool_callback') {
        socket.send(JSON.stringify({ type: 'tool_result', call_id: frame.call_id, success: true, result: { on: frame.arguments?.on } }));
      } else if (!greeted) {
        expectAnswer(frame.type === 'status' && frame.status === 'connected', frame, 'the device connection');
        greeted = true;
        socket.send(JSON.stringify({ type: 'register_tools', tools: [LIGHT_TOOL] }));
      } else if (frame.type === 'tools_registered') {
        clearTimeout(timer);
        expectAnswer(frame.count === undefined || frame.count === 1, frame, 'register_tools');
        resolve();
      }
    });
    socket.once('error', reject);
    socket.once('unexpected-response', (_request, response) => reject(new Error(`The tool device was refused: HTTP ${response.statusCode}`)));
  });
  return socket;
}

/** An agent calling the device's tool over LiteMCP (one frame each way), checking every answer. */
async function openAgent(port: number): Promise<{ call(id: number): Promise<void>; close(): void }> {
  const socket = await FrameSocket.open(`ws://127.0.0.1:${port}/litemcp/${AGENT_TOOL}`, { headers: AUTH });
  return {
    call: async (id) => {
      const frame = await socket.exchange({ version: [1, 0, 0], id, type: 'call', data: { version: [1, 0, 0], tool: AGENT_TOOL, arguments: ['true'] } });
      expectAnswer(
        frame.type === 'result' && frame.id === id && frame.data.response.error === false && frame.data.response.content[0]?.data === LIGHT_RESULT,
        frame,
        'a device tool call over LiteMCP',
      );
    },
    close: () => socket.close(),
  };
}

interface CallFigures {
  calls_per_s: number;
  p50_ms: number;
  p99_ms: number;
  /** Both instances' CPU per call (the idle one's included), and Redis's. */
  server_cpu_us_per_call: number;
  redis_cpu_us_per_call: number | null;
}

/** One way of calling the device: its pair of instances (the device on the first) and the instance the agents call through. */
interface CallMode {
  instances: ServerProcess[];
  agentServer: ServerProcess;
}

/** What one mode has measured so far, over its blocks. */
class CallTally {
  calls = 0;
  seconds = 0;
  serversCpu = 0;
  redisCpu: number | undefined = 0;
  readonly latenciesMs: number[] = [];

  add(calls: number, seconds: number, latenciesMs: number[], before: CpuReading, after: CpuReading): void {
    this.calls += calls;
    this.seconds += seconds;
    after.servers.forEach((value, index) => (this.serversCpu += value - before.servers[index]));
    this.redisCpu =
      this.redisCpu === undefined || before.redis === undefined || after.redis === undefined ? undefined : this.redisCpu + after.redis - before.redis;
    for (const latency of latenciesMs) this.latenciesMs.push(latency);
  }

  figures(): CallFigures {
    const latency = summarise(this.latenciesMs);
    return {
      calls_per_s: round(this.calls / this.seconds, 1),
      p50_ms: latency.p50_ms,
      p99_ms: latency.p99_ms,
      server_cpu_us_per_call: round(this.serversCpu / this.calls, 1),
      redis_cpu_us_per_call: this.redisCpu === undefined ? null : round(this.redisCpu / this.calls, 1),
    };
  }
}

/**
 * `connections` closed-loop agents per mode, every mode measured in `rounds` short blocks taken in
 * turn (the order rotating each round), so that a machine whose load changes over the run weighs
 * on every mode alike; one warm-up per mode first. CPU of the mode's instances and of Redis per call.
 */
async function measureCallModes(modes: CallMode[], redis: BenchRedis, connections: number, options: FleetOptions['calls']): Promise<CallFigures[]> {
  const agents = await Promise.all(modes.map((mode) => Promise.all(Array.from({ length: connections }, () => openAgent(mode.agentServer.port)))));
  try {
    const nextIds = agents.map((set) => set.map(() => 1));
    const exchanges = agents.map((set, mode) => set.map((agent, index) => () => agent.call(nextIds[mode][index]++)));
    const { warmupMs, durationMs, maxCallsPerConnection } = options.bounds;
    for (const modeExchanges of exchanges) await runClosedLoop(modeExchanges, { warmupMs: 0, durationMs: warmupMs, maxCallsPerConnection });
    const block = { warmupMs: 0, durationMs: durationMs / options.rounds, maxCallsPerConnection: Math.ceil(maxCallsPerConnection / options.rounds) };
    const tallies = modes.map(() => new CallTally());
    for (let roundIndex = 0; roundIndex < options.rounds; roundIndex++) {
      for (let step = 0; step < modes.length; step++) {
        const index = (roundIndex + step) % modes.length;
        const before = cpuNow(modes[index].instances, redis);
        const result = await runClosedLoop(exchanges[index], block);
        tallies[index].add(result.calls, result.seconds, result.latenciesMs, before, cpuNow(modes[index].instances, redis));
      }
    }
    return tallies.map((tally) => tally.figures());
  } finally {
    agents.flat().forEach((agent) => agent.close());
  }
}

interface CallPairFigures {
  same: CallFigures;
  cross: CallFigures;
}

/**
 * The gateway pair and the baseline pair, all four processes up: a device on each pair's first
 * instance; agents on that instance (same instance), and on the second (the call goes B -> Redis
 * -> A -> device and back), for each number of agents, the four ways interleaved.
 */
async function measureCalls(gateway: ServerProcess[], baseline: ServerProcess[], redis: BenchRedis, options: FleetOptions['calls']) {
  const devices: WebSocket[] = [];
  try {
    devices.push(await openToolDevice(gateway[0].port), await openToolDevice(baseline[0].port));
    await waitFor(
      async () =>
        (await gatewaySeesTool(gateway[0])) && (await gatewaySeesTool(gateway[1])) && (await bareSeesTool(baseline[0])) && (await bareSeesTool(baseline[1])),
      10_000,
      `every instance did not see ${AGENT_TOOL}`,
    );
    const figures = new Map<number, { gateway: CallPairFigures; baseline: CallPairFigures }>();
    for (const connections of options.connections) {
      const [gatewaySame, gatewayCross, bareSame, bareCross] = await measureCallModes(
        [
          { instances: gateway, agentServer: gateway[0] },
          { instances: gateway, agentServer: gateway[1] },
          { instances: baseline, agentServer: baseline[0] },
          { instances: baseline, agentServer: baseline[1] },
        ],
        redis,
        connections,
        options,
      );
      figures.set(connections, { gateway: { same: gatewaySame, cross: gatewayCross }, baseline: { same: bareSame, cross: bareCross } });
    }
    return figures;
  } finally {
    devices.forEach((device) => device.terminate());
  }
}

const gatewaySeesTool = async (server: ServerProcess) => {
  const { status, body } = await getJson(server.port, `/devices/${DEVICE}`);
  return status === 200 && body.tools?.some((tool: { agent_name: string }) => tool.agent_name === AGENT_TOOL);
};
const bareSeesTool = async (server: ServerProcess) => (await getJson(server.port, `/devices/${DEVICE}`)).status === 200;

// ---------------------------------------------------------------------------------------------
// Push fan-out

interface FanoutFigures {
  devices: number;
  /** From the first request to the last device's `llm_response`. */
  fanout_s: number;
  /** From the first request to the last HTTP answer. */
  http_done_s: number;
  pushes_per_s: number;
  /** Each push, from its request to its device's frame. */
  push_p50_ms: number;
  push_p99_ms: number;
  /** Both instances' CPU per push, each instance's (A takes every HTTP request), and Redis's. */
  server_cpu_us_per_push: number;
  instance_cpu_us_per_push: { a: number; b: number };
  redis_cpu_us_per_push: number | null;
}

/** How a round sends its pushes: when each was sent (monotonic ms) and when the last answer came. */
type PushSender = (port: number, ids: string[], text: string, concurrency: number) => Promise<{ sentAt: Map<string, number>; doneAt: number }>;

/** POSTs `{"text"}` to `/devices/<id>/say` on `port` for every id, `concurrency` at a time on keep-alive sockets. */
const sendEachPush: PushSender = async (port, ids, text, concurrency) => {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  const body = JSON.stringify({ text });
  const sentAt = new Map<string, number>();
  const post = (id: string) =>
    new Promise<void>((resolve, reject) => {
      sentAt.set(id, monotonicMs());
      const request = httpRequest(
        {
          host: '127.0.0.1',
          port,
          method: 'POST',
          path: `/devices/${id}/say`,
          agent,
          headers: { ...AUTH, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
          timeout: REQUEST_TIMEOUT_MS,
        },
        (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () => {
            const answer = Buffer.concat(chunks).toString();
            if (response.statusCode === 200 && JSON.parse(answer).delivered === 'spoken') resolve();
            else reject(new Error(`fleet: the push to ${id} was answered ${response.statusCode}: ${answer.slice(0, 300)}`));
          });
        },
      );
      request.once('timeout', () => request.destroy(new Error(`fleet: the push to ${id} was not answered within ${REQUEST_TIMEOUT_MS / 1000} s`)));
      request.once('error', reject);
      request.end(body);
    });
  let next = 0;
  const worker = async () => {
    while (next < ids.length) await post(ids[next++]);
  };
  try {
    await Promise.all(Array.from({ length: Math.min(concurrency, ids.length) }, worker));
    return { sentAt, doneAt: monotonicMs() };
  } finally {
    agent.destroy();
  }
};

/** POSTs `{"devices": ids, "text"}` to `/devices/say` on `port`: one request for the whole fan-out. */
const sendOnePush: PushSender = async (port, ids, text) => {
  const sent = monotonicMs();
  const answer = await postJson(port, '/devices/say', { devices: ids, text });
  const results = answer.body?.results as { device: string; delivered?: string }[] | undefined;
  const missed = results?.find((result) => result.delivered !== 'spoken');
  if (answer.status !== 200 || results?.length !== ids.length || missed) {
    throw new Error(`fleet: the fan-out was answered ${answer.status}: ${JSON.stringify(missed ?? answer.body).slice(0, 300)}`);
  }
  return { sentAt: new Map(ids.map((id) => [id, sent])), doneAt: monotonicMs() };
};

/** The two ways a fan-out is sent, as figures name them. */
const FANOUT_WAYS = { request_per_device: sendEachPush, one_request: sendOnePush } as const;
type FanoutWay = keyof typeof FANOUT_WAYS;

/** Until `port`'s directory holds `count` devices. */
async function directoryHolds(port: number, count: number): Promise<void> {
  await waitFor(
    async () => ((await getJson(port, '/devices')).body?.devices?.length ?? 0) >= count,
    PHASE_TIMEOUT_MS,
    `the directory did not reach ${count} devices`,
  );
}

/** A pair of instances with half the fan-out's devices on each, held by a swarm each. */
interface FanoutPair {
  servers: ServerProcess[];
  swarms: DeviceSwarm[];
}

/** Sends a push to each of `ids` through the pair's first instance and waits until every device has it; the timings. */
async function pushRound(pair: FanoutPair, idsBySwarm: string[][], ids: string[], text: string, concurrency: number, send: PushSender) {
  await Promise.all(pair.swarms.map((swarm) => swarm.expect(text)));
  const wanted = new Set(ids);
  const start = monotonicMs();
  const { sentAt, doneAt } = await send(pair.servers[0].port, ids, text, concurrency);
  const collected = await Promise.all(
    pair.swarms.map((swarm, index) => swarm.collect(idsBySwarm[index].filter((id) => wanted.has(id)).length, PHASE_TIMEOUT_MS)),
  );
  const latencies: number[] = [];
  let last = start;
  collected.forEach((answer, index) => {
    if (answer.wrongPush) throw new Error(`fleet: a device received an unexpected push: ${answer.wrongPush}`);
    idsBySwarm[index].forEach((id, position) => {
      if (!wanted.has(id)) return;
      const arrival = answer.arrivals[position];
      if (arrival < 0) throw new Error(`fleet: device ${id} did not receive its push (${answer.arrived} did)`);
      latencies.push(arrival - sentAt.get(id)!);
      last = Math.max(last, arrival);
    });
  });
  return { start, doneAt, last, latencies };
}

/** One measured round of the fan-out on `pair`. */
async function fanoutRound(
  pair: FanoutPair,
  idsBySwarm: string[][],
  ids: string[],
  redis: BenchRedis,
  concurrency: number,
  send: PushSender,
): Promise<FanoutFigures> {
  const before = cpuNow(pair.servers, redis);
  const pushed = await pushRound(pair, idsBySwarm, ids, PUSH_TEXT, concurrency, send);
  const cpu = cpuPer(before, cpuNow(pair.servers, redis), ids.length);
  const latency = summarise(pushed.latencies);
  const fanoutS = (pushed.last - pushed.start) / 1000;
  return {
    devices: ids.length,
    fanout_s: round(fanoutS),
    http_done_s: round((pushed.doneAt - pushed.start) / 1000),
    pushes_per_s: round(ids.length / fanoutS, 1),
    push_p50_ms: latency.p50_ms,
    push_p99_ms: latency.p99_ms,
    server_cpu_us_per_push: cpu.server_cpu_us,
    instance_cpu_us_per_push: { a: cpu.each_server_cpu_us[0], b: cpu.each_server_cpu_us[1] },
    redis_cpu_us_per_push: cpu.redis_cpu_us,
  };
}

/** The round of median fan-out time (the lower middle one of an even count). */
const medianRound = (rounds: FanoutFigures[]) => [...rounds].sort((x, y) => x.fanout_s - y.fanout_s)[Math.floor((rounds.length - 1) / 2)];

/**
 * `devices` devices on each pair, half on its A and half on its B (alternating ids), from a
 * source address of the pair's own; every push through A's HTTP route, alternating A's and B's
 * devices. A warm-up round per pair, then `rounds` rounds taking the pairs in turn.
 */
async function measureFanout(gateway: ServerProcess[], baseline: ServerProcess[], redis: BenchRedis, options: FleetOptions['fanout']) {
  const ids = Array.from({ length: options.devices }, (_, index) => `fan-${String(index).padStart(6, '0')}`);
  const idsBySwarm = [ids.filter((_, index) => index % 2 === 0), ids.filter((_, index) => index % 2 === 1)];
  return withSwarms(4, async (swarms) => {
    const pairs: FanoutPair[] = [
      { servers: gateway, swarms: swarms.slice(0, 2) },
      { servers: baseline, swarms: swarms.slice(2, 4) },
    ];
    await Promise.all(
      pairs.flatMap((pair, pairIndex) =>
        pair.servers.map((server, index) =>
          pair.swarms[index].connect({
            url: `ws://127.0.0.1:${server.port}/`,
            ids: idsBySwarm[index],
            token: BENCH_TOKEN,
            idHeader: true,
            localAddresses: [`127.0.0.${FANOUT_SOURCE_ADDRESS + pairIndex}`],
            perAddress: SOCKETS_PER_ADDRESS,
            firstIndex: 0,
            concurrency: CONNECT_CONCURRENCY,
            timeoutMs: PHASE_TIMEOUT_MS,
          }),
        ),
      ),
    );
    for (const pair of pairs) await directoryHolds(pair.servers[0].port, ids.length);
    const figures = new Map<FanoutWay, { gateway: FanoutFigures[]; baseline: FanoutFigures[] }>();
    for (const [way, send] of Object.entries(FANOUT_WAYS) as [FanoutWay, PushSender][]) {
      for (const pair of pairs) await pushRound(pair, idsBySwarm, ids.slice(0, options.warmup), WARMUP_TEXT, options.concurrency, send);
      const rounds: FanoutFigures[][] = [[], []];
      for (let roundIndex = 0; roundIndex < options.rounds; roundIndex++) {
        for (let step = 0; step < pairs.length; step++) {
          const index = (roundIndex + step) % pairs.length;
          rounds[index].push(await fanoutRound(pairs[index], idsBySwarm, ids, redis, options.concurrency, send));
        }
      }
      figures.set(way, { gateway: rounds[0], baseline: rounds[1] });
    }
    return figures;
  });
}

// ---------------------------------------------------------------------------------------------
// Idle devices

/** The soft limit on open files of this process (children inherit it); undefined where `/proc` is missing. */
function openFilesLimit(): { soft: number; hard: number } | undefined {
  try {
    const line = readFileSync('/proc/self/limits', 'utf8')
      .split('\n')
      .find((entry) => entry.startsWith('Max open files'));
    const [soft, hard] = line!.replace('Max open files', '').trim().split(/\s+/);
    const value = (text: string) => (text === 'unlimited' ? Number.POSITIVE_INFINITY : Number(text));
    return { soft: value(soft), hard: value(hard) };
  } catch {
    return undefined;
  }
}

interface IdleFigures {
  connect_total_s: number;
  connects_per_s: number;
  /** The server's CPU per device connected (read from outside): what a connect costs it, whoever was the bottleneck. */
  server_cpu_us_per_connect: number;
  connect_p50_ms: number;
  connect_p99_ms: number;
  rss_bytes_per_device: number;
  heap_bytes_per_device: number;
  rss_mb_before: number;
  rss_mb_after: number;
}

/** `count` devices (named or not) held idle on `server` by `swarmCount` swarms from several source addresses. */
async function measureIdle(server: ServerProcess, count: number, swarmCount: number, named: boolean, settleMs: number): Promise<IdleFigures> {
  await sleep(settleMs);
  const before = await server.usage();
  const ids = Array.from({ length: count }, (_, index) => `idle-${String(index).padStart(6, '0')}`);
  const addresses = Array.from({ length: Math.ceil(count / SOCKETS_PER_ADDRESS) }, (_, index) => `127.0.0.${2 + index}`);
  const share = Math.ceil(count / swarmCount);
  return withSwarms(swarmCount, async (swarms) => {
    const cpuBefore = cpuNow([server]);
    const answers = await Promise.all(
      swarms.map((swarm, index) =>
        swarm.connect({
          url: `ws://127.0.0.1:${server.port}/`,
          ids: ids.slice(index * share, (index + 1) * share),
          token: BENCH_TOKEN,
          idHeader: named,
          localAddresses: addresses,
          perAddress: SOCKETS_PER_ADDRESS,
          firstIndex: index * share,
          concurrency: CONNECT_CONCURRENCY,
          timeoutMs: PHASE_TIMEOUT_MS,
        }),
      ),
    );
    const seconds = (Math.max(...answers.map((answer) => answer.endMs)) - Math.min(...answers.map((answer) => answer.startMs))) / 1000;
    const cpu = cpuPer(cpuBefore, cpuNow([server]), count);
    await sleep(2 * settleMs);
    const after = await server.usage();
    const open = (await Promise.all(swarms.map((swarm) => swarm.count()))).reduce((sum, { open }) => sum + open, 0);
    if (open !== count) throw new Error(`fleet idle: ${count - open} of ${count} devices of ${server.name} closed while idle`);
    if (named && server.name === 'gateway') {
      const last = await getJson(server.port, `/devices/${ids[count - 1]}`);
      expectAnswer(last.status === 200, last, 'the last device in the directory');
    }
    const latency = summarise(answers.flatMap((answer) => answer.latenciesMs));
    return {
      connect_total_s: round(seconds),
      connects_per_s: round(count / seconds, 1),
      server_cpu_us_per_connect: cpu.server_cpu_us,
      connect_p50_ms: latency.p50_ms,
      connect_p99_ms: latency.p99_ms,
      rss_bytes_per_device: round((after.rss - before.rss) / count, 0),
      heap_bytes_per_device: round((after.heapUsed - before.heapUsed) / count, 0),
      rss_mb_before: round(before.rss / 2 ** 20, 1),
      rss_mb_after: round(after.rss / 2 ** 20, 1),
    };
  });
}

async function benchIdleDevices(options: FleetOptions['idle']): Promise<void> {
  const limit = openFilesLimit();
  const perProcess = limit ? Math.max(100, limit.soft - FD_RESERVE) : Number.POSITIVE_INFINITY;
  const count = Math.min(options.devices, Math.floor(perProcess / 1000) * 1000 || Math.floor(perProcess));
  const swarmCount = Math.max(2, Math.ceil(count / perProcess));
  const limited = count < options.devices;
  const baseline = await withServer(bareWsServer, (server) => measureIdle(server, count, swarmCount, true, options.settleMs));
  const plain = await withServer(gatewayFor(count + 100), (server) => measureIdle(server, count, swarmCount, false, options.settleMs));
  const fleet = await withServer(gatewayFor(count + 100), (server) => measureIdle(server, count, swarmCount, true, options.settleMs));
  const rssRatio = ratio(fleet.rss_bytes_per_device, baseline.rss_bytes_per_device);
  const connectRatio = ratio(fleet.connects_per_s, baseline.connects_per_s);
  emit({
    figure: 'fleet_idle_devices',
    devices: count,
    requested: options.devices,
    ...(limited && {
      limited_by: `RLIMIT_NOFILE ${limit!.soft} (hard ${limit!.hard}): one process holds at most that many sockets, so one instance at most about ${Math.floor(perProcess)} devices`,
    }),
    client_processes: swarmCount,
    source_addresses: Math.ceil(count / SOCKETS_PER_ADDRESS),
    gateway_fleet: fleet,
    gateway_unnamed: plain,
    baseline,
    ratio: {
      rss_per_device: rssRatio,
      heap_per_device: ratio(fleet.heap_bytes_per_device, baseline.heap_bytes_per_device),
      connects_per_s: connectRatio,
      connect_p50: ratio(fleet.connect_p50_ms, baseline.connect_p50_ms),
      cpu_per_connect: ratio(fleet.server_cpu_us_per_connect, baseline.server_cpu_us_per_connect),
      fleet_rss_to_unnamed: ratio(fleet.rss_bytes_per_device, plain.rss_bytes_per_device),
    },
    target: {
      max_rss_ratio: 1.5,
      rss_met: rssRatio > 0 && rssRatio <= 1.5,
      min_connect_ratio: 0.8,
      connect_met: connectRatio >= 0.8,
    },
  });
}

// ---------------------------------------------------------------------------------------------

/**
 * The fleet (issue text, BENCHMARKS.md "Fleet"): an agent's call of a device tool on the device's
 * instance and through a second one on Redis, a `say` fanned out to devices on two instances, and
 * idle named devices on one instance, each beside the least a Node process must do for the same
 * (servers/bare-fleet-server.ts; the bare `ws` server for idle sockets).
 */
export async function benchFleet(options: FleetOptions): Promise<void> {
  // `BENCH_FLEET_PARTS=calls,fanout,idle` (all by default) runs some of the figures, e.g. to profile one.
  const parts = new Set((process.env.BENCH_FLEET_PARTS || 'calls,fanout,idle').split(','));
  if (parts.has('calls') || parts.has('fanout')) await benchTwoInstances(options, parts);
  if (parts.has('idle')) await benchIdleDevices(options.idle);
}

/**
 * The figures on two instances and Redis, the gateway's pair (A, B) and the baseline's pair up
 * together, each on a key prefix of its own, measured in turn: an agent's call of a device tool,
 * and the push fan-out.
 */
async function benchTwoInstances(options: FleetOptions, parts: Set<string>): Promise<void> {
  const redis = await BenchRedis.open();
  const prefixes = [benchPrefix('fleet'), benchPrefix('bare-fleet')];
  try {
    const maxConnections = Math.ceil(options.fanout.devices / 2) + 100;
    const specs = [fleetGateway(prefixes[0], maxConnections), fleetGateway(prefixes[0], maxConnections), bareFleet(prefixes[1]), bareFleet(prefixes[1])];
    await withServers(specs, async (servers) => {
      const gateway = servers.slice(0, 2);
      const baseline = servers.slice(2, 4);
      if (parts.has('calls')) emitCalls(options, await measureCalls(gateway, baseline, redis, options.calls));
      if (parts.has('fanout')) for (const [way, rounds] of await measureFanout(gateway, baseline, redis, options.fanout)) emitFanout(options, way, rounds);
    });
  } finally {
    await Promise.all(prefixes.map((prefix) => redis.removeKeys(prefix))).catch(() => undefined);
    redis.close();
  }
}

function emitCalls(options: FleetOptions, figures: Map<number, { gateway: CallPairFigures; baseline: CallPairFigures }>): void {
  for (const connections of options.calls.connections) {
    const { gateway: measured, baseline: bare } = figures.get(connections)!;
    const adds = round(measured.cross.p50_ms - measured.same.p50_ms);
    emit({
      figure: 'fleet_device_tool_call',
      protocol: 'litemcp',
      connections,
      rounds: options.calls.rounds,
      same_instance: measured.same,
      cross_instance: measured.cross,
      baseline: { same_instance: bare.same, cross_instance: bare.cross },
      cross_instance_adds: {
        p50_ms: adds,
        p99_ms: round(measured.cross.p99_ms - measured.same.p99_ms),
        server_cpu_us_per_call: round(measured.cross.server_cpu_us_per_call - measured.same.server_cpu_us_per_call, 1),
        baseline_p50_ms: round(bare.cross.p50_ms - bare.same.p50_ms),
        baseline_server_cpu_us_per_call: round(bare.cross.server_cpu_us_per_call - bare.same.server_cpu_us_per_call, 1),
      },
      ratio: {
        same_p50: ratio(measured.same.p50_ms, bare.same.p50_ms),
        cross_p50: ratio(measured.cross.p50_ms, bare.cross.p50_ms),
        same_cpu: ratio(measured.same.server_cpu_us_per_call, bare.same.server_cpu_us_per_call),
        cross_cpu: ratio(measured.cross.server_cpu_us_per_call, bare.cross.server_cpu_us_per_call),
      },
      target: { max_cross_instance_adds_p50_ms: 1, met: adds <= 1 },
    });
  }
}

function emitFanout(options: FleetOptions, way: FanoutWay, rounds: { gateway: FanoutFigures[]; baseline: FanoutFigures[] }): void {
  const gateway = medianRound(rounds.gateway);
  const baseline = medianRound(rounds.baseline);
  emit({
    figure: 'fleet_push_fanout',
    way,
    instances: 2,
    devices: options.fanout.devices,
    concurrency: way === 'one_request' ? 1 : options.fanout.concurrency,
    rounds: options.fanout.rounds,
    gateway,
    baseline,
    every_round_fanout_s: { gateway: rounds.gateway.map((figures) => figures.fanout_s), baseline: rounds.baseline.map((figures) => figures.fanout_s) },
    ratio: {
      fanout_s: ratio(gateway.fanout_s, baseline.fanout_s),
      cpu_per_push: ratio(gateway.server_cpu_us_per_push, baseline.server_cpu_us_per_push),
    },
    target: { max_fanout_s: 2, met: gateway.fanout_s <= 2 },
  });
}
