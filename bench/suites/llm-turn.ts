import { mkdtemp, rm, writeFile } from 'fs/promises';
import { tmpdir } from 'os';
import { join } from 'path';
import { SentenceSplitter } from '../../src/assistant/speech/sentence-splitter';
import { ChatRequest, lastUserText, Pace, ScriptedLlm, ScriptedReply, toolResults } from '../../test/support/scripted-llm';
import { expectAnswer, FrameSocket } from '../support/frame-socket';
import { ServerProcess } from '../support/processes';
import { BENCH_TOKEN, bareTurnServer, gatewayServer } from '../support/servers';
import { elapsedMs, emit, ratio, round, summarise } from '../support/stats';
import { withServer } from './tool-calls';

export interface LlmTurnOptions {
  warmupTurns: number;
  turns: number;
  /** Turns of the latency figure, each at a real model's pace (a second or two each). */
  pacedTurns: number;
}

const AUTH = { Authorization: `Bearer ${BENCH_TOKEN}` };

/** Longest a single turn (gateway or direct) may take before the bench gives up on it. */
export const TURN_TIMEOUT_MS = 10_000;

/** The device tool of the tool turn, registered by the bench's client. */
const LIGHT_TOOL = {
  name: 'device_light_set',
  description: 'Turns the device light on or off, at a brightness',
  parameters: {
    type: 'object',
    properties: {
      on: { type: 'boolean', description: 'Whether the light is on' },
      brightness: { type: 'integer', minimum: 0, maximum: 100, description: 'Brightness, percent' },
    },
    required: ['on'],
    additionalProperties: false,
  },
};
const LIGHT_ARGUMENTS = { on: true, brightness: 40 };
const LIGHT_RESULT = { on: true, brightness: 40 };

const PLAIN_PROMPT = 'Say something short';
const PLAIN_ANSWER = 'Here is something short to say out loud.';
const TOOL_PROMPT = 'Add two and three, and turn the light on';
const STREAMED_PROMPT = 'Say a few sentences';
const STREAMED_ANSWER = 'Here is the first sentence. Here is the second one, a little longer. And a third to finish.';
const PACED_PROMPT = 'Tell me about the weather';
const PACED_ANSWER = 'Beijing is sunny today. The high is 25 degrees. A light wind blows from the north. Rain may come on Friday. Enjoy the weekend!';
/** A real model's pace: the first token after 300 ms, then 40 tokens a second. */
const REAL_PACE: Pace = { firstTokenMs: 300, tokensPerSecond: 40 };

/** The answer of the tool turn's second model call, built from the results the gateway fed back. */
const toolAnswer = (sum: unknown, light: unknown) => `The sum is ${sum} and the light answered ${JSON.stringify(light)}`;

/**
 * The scripted model, a pure function of the request so that neither queue order nor the
 * direct re-posts can change what it answers: the plain prompt gets text; the tool prompt gets
 * one round calling the server's calculator and the device's light together, then, once the
 * request carries their results, text made of those results.
 */
function model(request: ChatRequest): ScriptedReply {
  if (lastUserText(request) === PLAIN_PROMPT) return { text: PLAIN_ANSWER };
  if (lastUserText(request) === STREAMED_PROMPT) return { text: STREAMED_ANSWER };
  if (lastUserText(request) === PACED_PROMPT) return { text: PACED_ANSWER, pace: REAL_PACE };
  const results = toolResults(request);
  if ('calc' in results || 'light' in results) return { text: toolAnswer(results.calc, results.light) };
  return {
    toolCalls: [
      { id: 'calc', name: 'calculator', arguments: { a: 2, b: 3 } },
      { id: 'light', name: LIGHT_TOOL.name, arguments: LIGHT_ARGUMENTS },
    ],
  };
}

/** One kind of turn: what the client says, and how it answers and checks the frames before `llm_response`. */
export interface TurnKind {
  name: 'plain' | 'streamed' | 'server_and_client_tool';
  /** Sent on the turn's own connection before its turns: sentence streaming. */
  configure?: Record<string, unknown>;
  prompt: string;
  answer: string;
  /** Model calls the gateway makes per turn; each is re-posted once for the direct time. */
  modelCalls: number;
  /** Checks one frame that arrives before `llm_response`, answering it when it asks for an answer. */
  onFrame(frame: any, socket: FrameSocket): void;
  checkResponse(frame: any): boolean;
  /** What the gateway time holds besides the model calls, for the reader of the figure. */
  note?: string;
  /** Also measured through the bare turn server. */
  baseline?: boolean;
}

export const isStatus = (frame: any, ...statuses: string[]) => frame.type === 'status' && statuses.includes(frame.status);

export const TURNS: TurnKind[] = [
  {
    name: 'plain',
    prompt: PLAIN_PROMPT,
    answer: PLAIN_ANSWER,
    modelCalls: 1,
    onFrame: (frame) => expectAnswer(isStatus(frame, 'processing'), frame, 'a plain turn'),
    checkResponse: (frame) => frame.tool_calls?.length === 0,
    baseline: true,
  },
  {
    name: 'streamed',
    prompt: STREAMED_PROMPT,
    answer: STREAMED_ANSWER,
    modelCalls: 1,
    configure: { stream: true },
    onFrame: (frame) => expectAnswer(isStatus(frame, 'processing') || (frame.type === 'llm_response' && frame.is_final === false), frame, 'a streamed turn'),
    checkResponse: (frame) => frame.tool_calls?.length === 0,
    note: 'sentences streamed (three llm_response partials, then the final)',
    baseline: true,
  },
  {
    name: 'server_and_client_tool',
    prompt: TOOL_PROMPT,
    answer: toolAnswer(5, LIGHT_RESULT),
    modelCalls: 2,
    onFrame(frame, socket) {
      if (frame.type === 'tool_call') {
        expectAnswer(frame.tool_name === 'calculator' && frame.success === true && frame.result === 5, frame, 'the calculator call');
      } else if (frame.type === 'tool_callback') {
        expectAnswer(frame.tool_name === LIGHT_TOOL.name && frame.arguments?.on === true, frame, 'the device tool call');
        socket.send({ type: 'tool_result', call_id: frame.call_id, success: true, result: LIGHT_RESULT });
      } else {
        expectAnswer(isStatus(frame, 'processing', 'waiting_for_tools'), frame, 'a tool turn');
      }
    },
    checkResponse: (frame) =>
      frame.tool_calls?.length === 2 &&
      frame.tool_calls.some((call: any) => call.name === 'calculator' && call.location === 'server' && call.success) &&
      frame.tool_calls.some((call: any) => call.name === LIGHT_TOOL.name && call.location === 'client' && call.success),
    note: 'gateway time includes one WebSocket round trip to the device (tool_callback, tool_result); direct time has none',
  },
];

/** Rejects with `what` when `promise` takes longer than `ms`: a stalled turn must fail, not hang the bench. */
export async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} took over ${ms} ms`)), ms)));
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Empties the scripted server's record and queues the model for every request it may get next. */
export function arm(llm: ScriptedLlm): void {
  llm.reset();
  llm.reply(...Array.from({ length: 8 }, () => model));
}

/**
 * One turn through the gateway: milliseconds from sending `text_input` to receiving
 * `llm_response`, every frame checked. The `status idle` that ends the turn is awaited, untimed.
 */
export async function gatewayTurn(socket: FrameSocket, kind: TurnKind): Promise<number> {
  const start = process.hrtime.bigint();
  socket.send({ type: 'text_input', text: kind.prompt });
  let frame = await socket.next();
  while (frame.type !== 'llm_response' || frame.is_final === false) {
    kind.onFrame(frame, socket);
    frame = await socket.next();
  }
  const ms = elapsedMs(start);
  expectAnswer(frame.content === kind.answer && frame.is_final === true && kind.checkResponse(frame), frame, `a ${kind.name} turn`);
  const idle = await socket.next();
  expectAnswer(isStatus(idle, 'idle'), idle, `the end of a ${kind.name} turn`);
  return ms;
}

/**
 * The same model calls fetched straight from the scripted server: each request body the
 * gateway sent, re-posted in order and its stream read to the end. The sum is what the turn
 * costs without the gateway.
 */
async function directTurn(llm: ScriptedLlm, bodies: string[]): Promise<number> {
  const start = process.hrtime.bigint();
  for (const body of bodies) {
    const response = await fetch(`${llm.baseUrl}chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    const text = await response.text();
    expectAnswer(response.ok && text.endsWith('data: [DONE]\n\n'), { status: response.status, text: text.slice(-200) }, 'a direct completion');
  }
  return elapsedMs(start);
}

/** A gateway turn then the same completions direct, alternating so both see the same machine. */
async function pairedTurn(llm: ScriptedLlm, socket: FrameSocket, kind: TurnKind): Promise<{ gateway: number; direct: number }> {
  arm(llm);
  const gateway = await within(gatewayTurn(socket, kind), TURN_TIMEOUT_MS, `A ${kind.name} turn through the gateway`);
  const bodies = llm.requests.map((request) => JSON.stringify(withoutHeaders(request)));
  expectAnswer(bodies.length === kind.modelCalls, { requests: bodies.length }, `the model calls of a ${kind.name} turn`);
  arm(llm);
  const direct = await within(directTurn(llm, bodies), TURN_TIMEOUT_MS, `The direct completions of a ${kind.name} turn`);
  return { gateway, direct };
}

/**
 * Warms up, then times `turns` paired turns. The gateway's CPU per turn leaves out the cost of
 * reading it (the probe's full garbage collections), measured by reading it twice in a row.
 */
async function measureTurns(server: ServerProcess, llm: ScriptedLlm, socket: FrameSocket, kind: TurnKind, options: LlmTurnOptions) {
  for (let turn = 0; turn < options.warmupTurns; turn++) await pairedTurn(llm, socket, kind);
  const probed = (await server.usage()).cpuMicros;
  const cpuBefore = (await server.usage()).cpuMicros;
  const probeCost = cpuBefore - probed;
  const gatewayMs: number[] = [];
  const directMs: number[] = [];
  const pairedMs: number[] = [];
  for (let turn = 0; turn < options.turns; turn++) {
    const { gateway, direct } = await pairedTurn(llm, socket, kind);
    gatewayMs.push(gateway);
    directMs.push(direct);
    pairedMs.push(gateway - direct);
  }
  const cpuUsed = (await server.usage()).cpuMicros - cpuBefore - probeCost;
  return { gateway: summarise(gatewayMs), direct: summarise(directMs), paired: summarise(pairedMs), cpuUsPerTurn: round(cpuUsed / options.turns, 1) };
}

/** A device's connection to the LLM gateway (`headers` besides the bench token's: a `Device-Id`), greeted. */
export async function connectDevice(server: ServerProcess, headers: Record<string, string> = {}): Promise<FrameSocket> {
  const socket = await FrameSocket.open(`ws://127.0.0.1:${server.port}/`, { headers: { ...AUTH, ...headers } });
  const greeting = await within(socket.next(), TURN_TIMEOUT_MS, 'The greeting');
  expectAnswer(isStatus(greeting, 'connected'), greeting, 'the connection');
  return socket;
}

/** Milliseconds since `start`, as a number. */
const since = (start: bigint) => elapsedMs(start);

/**
 * A streamed turn at a real model's pace: from `text_input`, when the first sentence arrives and
 * when the final answer does.
 */
async function pacedGatewayTurn(socket: FrameSocket): Promise<{ firstSentence: number; final: number }> {
  const start = process.hrtime.bigint();
  socket.send({ type: 'text_input', text: PACED_PROMPT });
  let firstSentence: number | undefined;
  for (;;) {
    const frame = await socket.next();
    if (frame.type === 'llm_response' && frame.is_final === false) firstSentence ??= since(start);
    if (frame.type === 'llm_response' && frame.is_final === true) {
      expectAnswer(frame.content === PACED_ANSWER && firstSentence !== undefined, frame, 'a paced streamed turn');
      const final = since(start);
      const idle = await socket.next();
      expectAnswer(isStatus(idle, 'idle'), idle, 'the end of a paced turn');
      return { firstSentence: firstSentence!, final };
    }
    expectAnswer(isStatus(frame, 'processing') || frame.type === 'llm_response', frame, 'a paced streamed turn');
  }
}

/**
 * The same completion fetched directly, its stream read as it comes: when the text holds its
 * first sentence (cut by the gateway's own rules) and when the stream ends.
 */
async function pacedDirectTurn(llm: ScriptedLlm, body: string): Promise<{ firstSentence: number; final: number }> {
  const start = process.hrtime.bigint();
  const response = await fetch(`${llm.baseUrl}chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  const splitter = new SentenceSplitter();
  const decoder = new TextDecoder();
  let firstSentence: number | undefined;
  let buffered = '';
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    buffered += decoder.decode(chunk, { stream: true });
    const events = buffered.split('\n\n');
    buffered = events.pop()!;
    for (const event of events) {
      const data = event.replace(/^data: /, '');
      if (data === '[DONE]') continue;
      const text = JSON.parse(data).choices?.[0]?.delta?.content;
      if (text && splitter.push(text).length > 0) firstSentence ??= since(start);
    }
  }
  expectAnswer(firstSentence !== undefined, { buffered }, 'a paced direct completion');
  return { firstSentence: firstSentence!, final: since(start) };
}

/**
 * Time to the first sentence and to the whole answer at a real model's pace (40 tokens a second,
 * the first after 300 ms), through the gateway with streaming on and fetched directly, turn by turn.
 */
async function measureLatency(llm: ScriptedLlm, socket: FrameSocket, turns: number) {
  const gatewayFirst: number[] = [];
  const gatewayFinal: number[] = [];
  const directFirst: number[] = [];
  const directFinal: number[] = [];
  const firstGap: number[] = [];
  for (let turn = 0; turn < turns; turn++) {
    arm(llm);
    const gateway = await within(pacedGatewayTurn(socket), TURN_TIMEOUT_MS, 'A paced turn through the gateway');
    const [{ headers: _headers, ...request }] = llm.requests;
    arm(llm);
    const direct = await within(pacedDirectTurn(llm, JSON.stringify(request)), TURN_TIMEOUT_MS, 'A paced direct completion');
    gatewayFirst.push(gateway.firstSentence);
    gatewayFinal.push(gateway.final);
    directFirst.push(direct.firstSentence);
    directFinal.push(direct.final);
    firstGap.push(gateway.firstSentence - direct.firstSentence);
  }
  const gap = summarise(firstGap);
  return {
    turns,
    pace: REAL_PACE,
    gateway: { first_sentence_p50_ms: summarise(gatewayFirst).p50_ms, final_p50_ms: summarise(gatewayFinal).p50_ms },
    direct: { first_sentence_p50_ms: summarise(directFirst).p50_ms, final_p50_ms: summarise(directFinal).p50_ms },
    first_sentence_after_direct: { p50_ms: gap.p50_ms, p99_ms: gap.p99_ms },
    target: { max_first_sentence_after_direct_p50_ms: 5, met: gap.p50_ms <= 5 },
  };
}

/**
 * LLM turn overhead: the time to `llm_response` through the gateway (auth, validation, session,
 * system prompt, the `openai` client's streaming, speech cleaning) minus the time of the very
 * same completions fetched directly from the same zero-delay scripted OpenAI-compatible server,
 * turn by turn on one connection. `overhead` is the difference of the percentiles (the issue's
 * figure); `overhead.paired_*` are percentiles of the per-turn differences. The plain and
 * streamed turns are also run through the bare turn server (servers/bare-turn-server.ts), whose
 * CPU per turn is the least a Node server spends on the same frames with the `openai` package.
 */
export async function benchLlmTurn(options: LlmTurnOptions): Promise<void> {
  const llm = await ScriptedLlm.start();
  const env = { LLM_BASE_URL: llm.baseUrl, LLM_MAX_RETRIES: '0', LLM_TIMEOUT: String(TURN_TIMEOUT_MS / 1000), LOCATION_PROVIDER_URL: 'off' };
  const scratch = await mkdtemp(join(tmpdir(), 'bench-turn-'));
  const requestFile = join(scratch, 'request.json');
  try {
    const figures = new Map<TurnKind, TurnFigures>();
    await withServer(
      (port) => gatewayServer(port, env),
      async (server) => {
        for (const kind of TURNS) {
          figures.set(kind, await measureKind(server, llm, kind, options));
          if (kind.name === 'plain') await writeFile(requestFile, JSON.stringify(withoutHeaders(llm.requests[0]!)));
        }
        const socket = await connectDevice(server);
        try {
          socket.send({ type: 'configure', stream: true });
          emit({ figure: 'llm_turn_latency', ...(await measureLatency(llm, socket, options.pacedTurns)) });
        } finally {
          socket.close();
        }
      },
    );
    const baselines = await withServer(
      () => bareTurnServer({ LLM_BASE_URL: llm.baseUrl, BENCH_TURN_REQUEST: requestFile }),
      async (server) => {
        const measured = new Map<TurnKind, TurnFigures>();
        for (const kind of TURNS.filter((turn) => turn.baseline)) measured.set(kind, await measureKind(server, llm, kind, options));
        return measured;
      },
    );
    for (const [kind, gateway] of figures) emitTurnFigure(kind, gateway, baselines.get(kind), options.turns);
  } finally {
    await rm(scratch, { recursive: true, force: true });
    await llm.close();
  }
}

type TurnFigures = Awaited<ReturnType<typeof measureTurns>>;

const withoutHeaders = ({ headers: _headers, ...body }: ChatRequest) => body;

/** One kind of turn on a connection of its own (configured, its device tool registered). */
async function measureKind(server: ServerProcess, llm: ScriptedLlm, kind: TurnKind, options: LlmTurnOptions): Promise<TurnFigures> {
  const socket = await connectDevice(server);
  try {
    if (kind.configure) socket.send({ type: 'configure', ...kind.configure });
    if (kind.name === 'server_and_client_tool') {
      const registered = await within(socket.exchange({ type: 'register_tools', tools: [LIGHT_TOOL] }), TURN_TIMEOUT_MS, 'register_tools');
      expectAnswer(registered.type === 'tools_registered' && registered.count === 1, registered, 'register_tools');
    }
    return await measureTurns(server, llm, socket, kind, options);
  } finally {
    socket.close();
  }
}

function emitTurnFigure(kind: TurnKind, gateway: TurnFigures, baseline: TurnFigures | undefined, turns: number): void {
  emit({
    figure: 'llm_turn_overhead',
    turn: kind.name,
    turns,
    model_calls_per_turn: kind.modelCalls,
    gateway: { p50_ms: gateway.gateway.p50_ms, p99_ms: gateway.gateway.p99_ms, cpu_us_per_turn: gateway.cpuUsPerTurn },
    direct: { p50_ms: gateway.direct.p50_ms, p99_ms: gateway.direct.p99_ms },
    ...(baseline && { baseline: { p50_ms: baseline.gateway.p50_ms, p99_ms: baseline.gateway.p99_ms, cpu_us_per_turn: baseline.cpuUsPerTurn } }),
    overhead: {
      p50_ms: round(gateway.gateway.p50_ms - gateway.direct.p50_ms),
      p99_ms: round(gateway.gateway.p99_ms - gateway.direct.p99_ms),
      paired_p50_ms: gateway.paired.p50_ms,
      paired_p99_ms: gateway.paired.p99_ms,
    },
    ratio: {
      p50: ratio(gateway.gateway.p50_ms, gateway.direct.p50_ms),
      ...(baseline && { cpu_to_baseline: ratio(gateway.cpuUsPerTurn, baseline.cpuUsPerTurn) }),
    },
    ...(kind.note && { note: kind.note }),
    ...(kind.name !== 'server_and_client_tool' && {
      target: { max_gateway_cpu_us_per_turn: 500, met: gateway.cpuUsPerTurn <= 500 },
    }),
  });
}
