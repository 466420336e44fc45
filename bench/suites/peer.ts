import { execFileSync } from 'child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { WebSocketClientTransport } from '@modelcontextprotocol/sdk/client/websocket.js';
import { WebSocket } from 'ws';
import type { LoopBounds } from '../support/closed-loop';
import { expectAnswer } from '../support/frame-socket';
import { BENCH_BUILD, PROJECT_ROOT, ServerProcess, ServerSpec } from '../support/processes';
import { BENCH_TOKEN, gatewayServer } from '../support/servers';
import { emit, ratio } from '../support/stats';
import { measureThroughput, ProtocolClient, ThroughputFigures, withServer } from './tool-calls';

export interface PeerOptions {
  connections: number[];
  bounds: LoopBounds;
}

const PEER_NAME = 'supergateway 4.0.0';

/** Long enough for any loaded call, short enough that a lost answer fails the run instead of hanging it. */
const CALL_TIMEOUT_MS = 10_000;

/**
 * The SDK's WebSocket client transport opens a global `WebSocket`, which Node 20 lacks; `ws`
 * (the package both servers use) stands in for it when absent. Newer Node has its own, which is
 * then the client for both sides alike.
 */
function provideWebSocket(): void {
  const global = globalThis as { WebSocket?: unknown };
  global.WebSocket ??= WebSocket;
}

/**
 * The one client both sides are measured with: the official SDK `Client` over its
 * `WebSocketClientTransport` (subprotocol `mcp`), initialized, repeating `calculator(2, 3)` and
 * failing on any answer but the text "5". Every client it opens is remembered in `opened`, so the
 * caller can close them all, including those left open when another failed to connect.
 */
function sdkClient(name: string, url: (port: number) => string, opened: Set<Client>, tool: string): ProtocolClient {
  return {
    name,
    async connect(port) {
      const client = new Client({ name: 'bench', version: '1' });
      opened.add(client);
      await client.connect(new WebSocketClientTransport(new URL(url(port))), { timeout: CALL_TIMEOUT_MS });
      return {
        call: async () => {
          const result = await client.callTool({ name: tool, arguments: { a: 2, b: 3 } }, undefined, { timeout: CALL_TIMEOUT_MS });
          const content = result.content as { type: string; text?: string }[] | undefined;
          expectAnswer(!result.isError && content?.[0]?.text === '5', result, `a tools/call through ${name}`);
        },
        close: () => void client.close(),
      };
    },
  };
}

/** The calculator's stdio MCP server, as a command line. */
const calculatorCommand = () => [process.execPath, join(BENCH_BUILD, 'servers', 'calculator-stdio-server.js')];

/**
 * The gateway doing supergateway's job: the same stdio calculator as an upstream MCP server
 * (`MCP_SERVERS_FILE`, prefix `calc`), its tool served on the plain MCP WebSocket as `calc.calculator`.
 */
function federatingGatewayServer(serversFile: string): (port: number) => ServerSpec {
  return (port) => ({ ...gatewayServer(port, { MCP_SERVERS_FILE: serversFile }), name: 'gateway (upstream)' });
}

/** Waits until the gateway on `port` lists the upstream's tool: the upstream starts after the gateway listens. */
async function untilUpstreamTool(port: number, tool: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  const client = new Client({ name: 'bench-ready', version: '1' });
  await client.connect(new WebSocketClientTransport(new URL(`ws://127.0.0.1:${port}/mcp?token=${BENCH_TOKEN}`)));
  try {
    while (!(await client.listTools()).tools.some((each) => each.name === tool)) {
      if (Date.now() > deadline) throw new Error(`The gateway did not list ${tool} within 20 s`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  } finally {
    await client.close();
  }
}

/** A word for `sh -c`, whatever the path holds. */
const shellWord = (word: string) => `'${word.replace(/'/g, `'\\''`)}'`;

/**
 * supergateway as its README starts it, serving the SDK calculator (servers/calculator-stdio-server.ts)
 * over WebSocket. It spawns that command through a shell, in a process group of its own, and
 * multiplexes every WebSocket client onto the one child, prefixing request ids with a client id.
 * Preloaded with loopback-only: it has no option to listen on anything but every interface.
 */
function supergatewayServer(port: number): ServerSpec {
  const child = calculatorCommand().map(shellWord).join(' ');
  return {
    name: 'supergateway',
    args: [
      join(PROJECT_ROOT, 'node_modules', 'supergateway', 'dist', 'index.js'),
      '--stdio',
      child,
      '--outputTransport',
      'ws',
      '--port',
      String(port),
      '--messagePath',
      '/message',
      '--logLevel',
      'none',
    ],
    preload: [join(BENCH_BUILD, 'support', 'loopback-only.js')],
  };
}

const PROC = '/proc';

let clockTicksPerSecond: number | undefined;
function ticksPerSecond(): number {
  clockTicksPerSecond ??= Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  return clockTicksPerSecond;
}

/** Whether the processes a server spawned can be read (Linux `/proc`); elsewhere only the server's own CPU is counted. */
function canReadProc(): boolean {
  try {
    readFileSync(join(PROC, 'self', 'stat'));
    return true;
  } catch {
    return false;
  }
}

/**
 * User + system CPU of every live descendant of `pid`, microseconds, from `/proc/<pid>/stat`
 * (fields 4 ppid, 14 utime, 15 stime, in clock ticks). supergateway's own usage probe cannot see
 * the stdio server doing the tool's work, nor the shell it runs it through.
 */
function descendantsCpuMicros(pid: number): number {
  const children = new Map<number, { ppid: number; ticks: number }>();
  for (const entry of readdirSync(PROC)) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(join(PROC, entry, 'stat'), 'utf8');
    } catch {
      continue;
    }
    // The command name (field 2) is parenthesised and may hold spaces or parentheses itself.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    children.set(Number(entry), { ppid: Number(fields[1]), ticks: Number(fields[11]) + Number(fields[12]) });
  }
  let ticks = 0;
  const parents = new Set([pid]);
  let grew = true;
  while (grew) {
    grew = false;
    for (const [child, { ppid, ticks: own }] of children) {
      if (parents.has(ppid) && !parents.has(child)) {
        parents.add(child);
        ticks += own;
        grew = true;
      }
    }
  }
  return (ticks / ticksPerSecond()) * 1e6;
}

/** The server as `measureThroughput` sees it, with its descendants' CPU added to its own. */
function withDescendantsCpu(server: ServerProcess): ServerProcess {
  return {
    ...server,
    async usage() {
      const usage = await server.usage();
      return { ...usage, cpuMicros: usage.cpuMicros + descendantsCpuMicros(server.pid) };
    },
  };
}

/** Runs the SDK client against one server, closing every client it opened whatever happens. */
async function measure(
  name: string,
  url: (port: number) => string,
  server: ServerProcess,
  connections: number,
  bounds: LoopBounds,
  tool = 'calculator',
): Promise<ThroughputFigures> {
  const opened = new Set<Client>();
  try {
    return await measureThroughput(server, sdkClient(name, url, opened, tool), connections, bounds);
  } finally {
    await Promise.allSettled([...opened].map((client) => client.close()));
  }
}

/**
 * The peer figure: MCP `tools/call` of the same calculator, by the same SDK client, through
 * supergateway (a stdio MCP server exposed over WebSocket) and through the gateway's plain MCP
 * WebSocket, each server alone on the machine while it is measured. supergateway's CPU per call
 * counts its stdio child too where `/proc` can be read (`cpu_includes_stdio_child`): the gateway
 * runs the tool in its own process, so leaving the child out would flatter the peer.
 */
export async function benchPeer(options: PeerOptions): Promise<void> {
  provideWebSocket();
  const countChild = canReadProc();
  const gatewayUrl = (port: number) => `ws://127.0.0.1:${port}/mcp?token=${BENCH_TOKEN}`;
  const directory = mkdtempSync(join(tmpdir(), 'bench-peer-'));
  const serversFile = join(directory, 'mcp-servers.json');
  const [command, ...args] = calculatorCommand();
  writeFileSync(serversFile, JSON.stringify({ mcpServers: { calc: { command, args } } }));
  try {
    for (const connections of options.connections) {
      const peer = await withServer(supergatewayServer, (server) =>
        measure('supergateway', (port) => `ws://127.0.0.1:${port}/message`, countChild ? withDescendantsCpu(server) : server, connections, options.bounds),
      );
      const gateway = await withServer(gatewayServer, (server) => measure('gateway', gatewayUrl, server, connections, options.bounds));
      // The same stdio server behind each: the gateway's upstream client against supergateway's pipe.
      const federating = await withServer(federatingGatewayServer(serversFile), async (server) => {
        await untilUpstreamTool(server.port, 'calc.calculator');
        return measure('gateway (upstream)', gatewayUrl, countChild ? withDescendantsCpu(server) : server, connections, options.bounds, 'calc.calculator');
      });
      emit({
        figure: 'peer_mcp_tools_call',
        connections,
        gateway,
        gateway_upstream: { ...federating, cpu_includes_stdio_child: countChild },
        peer: { name: PEER_NAME, ...peer, cpu_includes_stdio_child: countChild },
        ratio: { calls_per_s: ratio(gateway.calls_per_s, peer.calls_per_s), p50: ratio(gateway.p50_ms, peer.p50_ms), p99: ratio(gateway.p99_ms, peer.p99_ms) },
        upstream_ratio: {
          calls_per_s: ratio(federating.calls_per_s, peer.calls_per_s),
          cpu_per_call: ratio(federating.server_cpu_us_per_call, peer.server_cpu_us_per_call),
        },
      });
    }
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}
