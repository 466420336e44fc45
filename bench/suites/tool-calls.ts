import { runClosedLoop, LoopBounds } from '../support/closed-loop';
import { expectAnswer, FrameSocket } from '../support/frame-socket';
import { freePort, ServerProcess, ServerSpec, startServer } from '../support/processes';
import { BENCH_TOKEN, bareWsServer, gatewayServer } from '../support/servers';
import { emit, ratio, round, summarise } from '../support/stats';

/** How a client of one protocol connects, and the one tool call it repeats: calculator(2, 3). */
export interface ProtocolClient {
  name: string;
  connect(port: number): Promise<{ call(id: number): Promise<void>; close(): void }>;
}

const AUTH = { Authorization: `Bearer ${BENCH_TOKEN}` };

export const PROTOCOLS: ProtocolClient[] = [
  {
    name: 'litemcp',
    async connect(port) {
      const socket = await FrameSocket.open(`ws://127.0.0.1:${port}/litemcp/calculator`, { headers: AUTH });
      return {
        call: async (id) => {
          const frame = await socket.exchange({
            version: [1, 0, 0],
            id,
            type: 'call',
            data: { version: [1, 0, 0], tool: 'calculator', arguments: ['2', '3'] },
          });
          expectAnswer(frame.type === 'result' && frame.id === id && frame.data.response.content[0]?.data === '5', frame, 'a LiteMCP call');
        },
        close: () => socket.close(),
      };
    },
  },
  {
    name: 'mcp-envelope',
    async connect(port) {
      const socket = await FrameSocket.open(`ws://127.0.0.1:${port}/mcp`, {}, (frame) => frame.type === 'ping');
      const auth = await socket.exchange({ type: 'auth', token: BENCH_TOKEN, clientInfo: { name: 'bench', version: '1' }, timestamp: Date.now() });
      expectAnswer(auth.status === 'authenticated', auth, 'auth');
      const sessionId: string = auth.sessionId;
      const message = (payload: object) => ({ type: 'message', sessionId, payload, timestamp: Date.now() });
      const init = await socket.exchange(
        message({
          jsonrpc: '2.0',
          id: 0,
          method: 'initialize',
          params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1' } },
        }),
      );
      expectAnswer(init.payload?.result !== undefined, init, 'initialize');
      socket.send(message({ jsonrpc: '2.0', method: 'notifications/initialized' }));
      return {
        call: async (id) => {
          const frame = await socket.exchange(message({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'calculator', arguments: { a: 2, b: 3 } } }));
          expectAnswer(frame.type === 'message' && frame.payload.id === id && frame.payload.result?.content[0]?.text === '5', frame, 'an MCP envelope call');
        },
        close: () => socket.close(),
      };
    },
  },
  {
    name: 'mcp-plain',
    async connect(port) {
      const socket = await FrameSocket.open(`ws://127.0.0.1:${port}/mcp?token=${BENCH_TOKEN}`, { protocols: ['mcp'] });
      const init = await socket.exchange({
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1' } },
      });
      expectAnswer(init.result !== undefined, init, 'initialize');
      socket.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      return {
        call: async (id) => {
          const frame = await socket.exchange({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'calculator', arguments: { a: 2, b: 3 } } });
          expectAnswer(frame.id === id && frame.result?.content[0]?.text === '5', frame, 'an MCP plain call');
        },
        close: () => socket.close(),
      };
    },
  },
  {
    // The 2026-07-28 revision on the same socket: no initialize, the envelope in each request's _meta.
    name: 'mcp-2026',
    async connect(port) {
      const socket = await FrameSocket.open(`ws://127.0.0.1:${port}/mcp?token=${BENCH_TOKEN}`, { protocols: ['mcp'] });
      const _meta = {
        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
        'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1' },
        'io.modelcontextprotocol/clientCapabilities': {},
      };
      return {
        call: async (id) => {
          const frame = await socket.exchange({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'calculator', arguments: { a: 2, b: 3 }, _meta } });
          expectAnswer(frame.id === id && frame.result?.content[0]?.text === '5', frame, 'an MCP 2026-07-28 call');
        },
        close: () => socket.close(),
      };
    },
  },
  {
    name: 'utcp',
    async connect(port) {
      const socket = await FrameSocket.open(`ws://127.0.0.1:${port}/utcp`, { headers: AUTH });
      return {
        call: async (id) => {
          const frame = await socket.exchange({ type: 'call', tool: 'calculator', id, params: { a: 2, b: 3 } });
          expectAnswer(frame.type === 'result' && frame.id === id && frame.result === 5, frame, 'a UTCP call');
        },
        close: () => socket.close(),
      };
    },
  },
];

export interface ToolCallOptions {
  connections: number[];
  bounds: LoopBounds;
  protocols?: string[];
}

export interface ThroughputFigures {
  calls_per_s: number;
  p50_ms: number;
  p99_ms: number;
  /** Server CPU time (user + system) per call: what the server spends, apart from waiting. */
  server_cpu_us_per_call: number;
}

/** Runs `protocol` with `connections` closed-loop callers against one running server. */
export async function measureThroughput(server: ServerProcess, protocol: ProtocolClient, connections: number, bounds: LoopBounds): Promise<ThroughputFigures> {
  const clients = await Promise.all(Array.from({ length: connections }, () => protocol.connect(server.port)));
  try {
    const nextIds = clients.map(() => 1);
    let cpuBefore = 0;
    const result = await runClosedLoop(
      clients.map((client, index) => () => client.call(nextIds[index]++)),
      bounds,
      async () => void (cpuBefore = (await server.usage()).cpuMicros),
    );
    const cpuUsed = (await server.usage()).cpuMicros - cpuBefore;
    const latency = summarise(result.latenciesMs);
    return {
      calls_per_s: round(result.calls / result.seconds, 1),
      p50_ms: latency.p50_ms,
      p99_ms: latency.p99_ms,
      server_cpu_us_per_call: round(cpuUsed / result.calls, 1),
    };
  } finally {
    clients.forEach((client) => client.close());
  }
}

/** Starts a server, runs `body`, and stops the server whatever happens. */
export async function withServer<T>(spec: (port: number) => ServerSpec, body: (server: ServerProcess) => Promise<T>): Promise<T> {
  const port = await freePort();
  const server = await startServer(spec(port), port);
  try {
    return await body(server);
  } finally {
    await server.stop();
  }
}

/**
 * Tool-call round trips per protocol through the whole gateway (auth and validation on) against
 * the bare `ws` baseline, each server alone on the machine while it is measured.
 */
export async function benchToolCalls(options: ToolCallOptions): Promise<void> {
  const protocols = PROTOCOLS.filter((protocol) => !options.protocols || options.protocols.includes(protocol.name));
  for (const connections of options.connections) {
    for (const protocol of protocols) {
      const baseline = await withServer(bareWsServer, (server) => measureThroughput(server, protocol, connections, options.bounds));
      const gateway = await withServer(gatewayServer, (server) => measureThroughput(server, protocol, connections, options.bounds));
      const target = connections === 1 ? 0.7 : 0.6;
      const rateRatio = ratio(gateway.calls_per_s, baseline.calls_per_s);
      emit({
        figure: 'tool_call_round_trip',
        protocol: protocol.name,
        connections,
        gateway,
        baseline,
        ratio: { calls_per_s: rateRatio, p50: ratio(gateway.p50_ms, baseline.p50_ms), p99: ratio(gateway.p99_ms, baseline.p99_ms) },
        target: { min_rate_ratio: target, met: rateRatio >= target },
      });
    }
  }
}
