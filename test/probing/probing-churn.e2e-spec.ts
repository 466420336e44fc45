import { SESSION_STORE } from '../../src/assistant/session/session-store';
import type { MemorySessionStore } from '../../src/assistant/session/memory-session.store';
import { SessionService } from '../../src/assistant/session/session.service';
import { ToolRegistryService } from '../../src/core/tools/tool-registry.service';
import { ConnectionRegistry } from '../../src/core/ws/connection-registry';
import { LlmStack, startLlmStack } from '../support/llm-stack';
import { collectGarbage, eventually, TimerCensus } from '../support/probing';
import { TestSocket } from '../support/test-socket';

const MCP_TOKEN = 'churn-mcp-token';
const COUNTDOWN = { seconds: 60, interval: 30 };

const DEVICE_TOOL = {
  name: 'get_battery',
  description: 'Battery level in percent',
  parameters: { type: 'object', properties: { unit: { type: 'string', enum: ['percent'] } } },
};
const WARM_UP_CYCLES = 300;
const MEASURED_CYCLES = 600;
const CENSUS_CYCLES = 100;

/**
 * Devices that connect, register a tool, ask something the model answers by calling that tool,
 * and go away without answering (half with a close frame, half cut off): hundreds of them,
 * ten at a time. Whatever each one made must go with it: its connection, its tool and compiled
 * schema, the pending call and its time limit, its heartbeat; its session is released, resumable
 * until CLOUD_SESSION_TIMEOUT, and then swept. The soak (`npm run soak`) does the same 10,000 times.
 */
describe('probing: connect/disconnect churn with device tool calls pending', () => {
  let stack: LlmStack;

  beforeAll(async () => {
    stack = await startLlmStack({
      CLIENT_TOOL_TIMEOUT: 30,
      WS_MAX_CONNECTIONS_PER_ADDRESS: 0,
      CLOUD_SESSION_TIMEOUT: 3,
      CLOUD_SESSION_CLEANUP_INTERVAL: 0.5,
      MCP_WS_AUTH_TOKEN: MCP_TOKEN,
      MCP_WS_MAX_CONNECTIONS: 20,
    });
  });
  afterAll(() => stack.close());

  /** One device: connects, registers its tool, asks; the model calls the tool; the device goes away without answering. */
  async function cycle(index: number): Promise<void> {
    const device = await stack.connect();
    device.send({ type: 'register_tools', tools: [DEVICE_TOOL] });
    expect(await device.next()).toMatchObject({ type: 'tools_registered', count: 1 });
    device.send({ type: 'text_input', text: `battery? (${index})` });
    expect((await device.until('tool_callback')).pop()).toMatchObject({ tool_name: 'get_battery' });
    if (index % 2 === 0) device.socket.terminate();
    else await device.close();
  }

  /** `cycles` devices, `workers` at a time; resolves once the gateway has let every one go. */
  async function churn(cycles: number, workers: number): Promise<void> {
    stack.llm.reply(...Array(cycles).fill({ toolCalls: [{ name: 'get_battery', arguments: { unit: 'percent' } }] }));
    let next = 0;
    await Promise.all(
      Array.from({ length: workers }, async () => {
        while (next < cycles) await cycle(next++);
      }),
    );
    const connections = stack.gateway.app.get(ConnectionRegistry);
    const registry = stack.gateway.app.get(ToolRegistryService);
    await eventually(() => connections.size === 0 && registry.callsRunning === 0, 'every connection closed and every call ended');
    stack.llm.reset();
  }

  it('leaves no connection, device tool, pending call, attached session or timer behind, and the heap where it was', async () => {
    const registry = stack.gateway.app.get(ToolRegistryService);
    const sessions = stack.gateway.app.get(SessionService);
    const store = stack.gateway.app.get<MemorySessionStore>(SESSION_STORE);
    let clientTools = 0;
    const subscription = registry.changes.subscribe((change) => {
      if (change.connectionId !== undefined) clientTools += change.type === 'added' ? 1 : -1;
    });
    // A first round makes what is made once (compiled code, pools, caches); the second is measured.
    await churn(WARM_UP_CYCLES, 10);
    collectGarbage();
    const heapBefore = process.memoryUsage().heapUsed;
    await churn(MEASURED_CYCLES, 10);
    collectGarbage();
    const heapGrowth = process.memoryUsage().heapUsed - heapBefore;
    // Counting timers costs memory of its own (async_hooks), so it watches a round of its own.
    const timers = new TimerCensus().start();
    await churn(CENSUS_CYCLES, 10);
    await timers.stop();
    subscription.unsubscribe();

    expect(clientTools).toBe(0);
    expect(registry.callsRunning).toBe(0);
    expect(sessions.attachedCount).toBe(0);
    expect(timers.origins).toEqual([]);
    // The validator leak probing found was 5.6 KB a tool; this allows 2.5 KB a device, GC noise included.
    expect(heapGrowth).toBeLessThan(MEASURED_CYCLES * 2.5 * 1024);
    // Released sessions stay resumable until CLOUD_SESSION_TIMEOUT, then go.
    await eventually(() => store.size === 0, 'every released session swept', 6000);
  });

  /** A client of another protocol that starts a minute-long countdown and goes away: the call must stop with it. */
  const CALLERS: [string, () => Promise<TestSocket>, (socket: TestSocket) => void][] = [
    ['UTCP /utcp', () => TestSocket.open(stack.gateway.ws('/utcp')), (socket) => socket.send({ type: 'call', id: 1, tool: 'countdown', params: COUNTDOWN })],
    ['UTCP /utcp/countdown', () => TestSocket.open(stack.gateway.ws('/utcp/countdown?stream=true')), (socket) => socket.send(COUNTDOWN)],
    [
      'MCP plain',
      () => TestSocket.open(stack.gateway.ws('/mcp'), { headers: { Authorization: `Bearer ${MCP_TOKEN}` }, protocols: ['mcp'] }),
      (socket) => socket.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'countdown', arguments: COUNTDOWN } }),
    ],
    [
      // A long tool: the call goes to the socket's own 2026 server, which must go with the socket.
      'MCP 2026-07-28',
      () => TestSocket.open(stack.gateway.ws('/mcp'), { headers: { Authorization: `Bearer ${MCP_TOKEN}` }, protocols: ['mcp'] }),
      (socket) =>
        socket.send({
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/call',
          params: {
            name: 'countdown',
            arguments: COUNTDOWN,
            _meta: {
              'io.modelcontextprotocol/protocolVersion': '2026-07-28',
              'io.modelcontextprotocol/clientCapabilities': {},
              'io.modelcontextprotocol/clientInfo': { name: 'churn', version: '1.0.0' },
            },
          },
        }),
    ],
  ];

  it.each(CALLERS)('%s: 50 callers that go away mid-call leave no call or timer behind', async (name, open, call) => {
    const registry = stack.gateway.app.get(ToolRegistryService);
    const connections = stack.gateway.app.get(ConnectionRegistry);
    const timers = new TimerCensus().start();
    for (let index = 0; index < 50; index += 1) {
      const socket = await open();
      call(socket);
      await eventually(() => registry.callsRunning === 1, 'the countdown running');
      if (index === 0) {
        const metrics = await (await fetch(stack.gateway.http('/metrics'))).text();
        expect(metrics).toMatch(/^gateway_tool_calls_running 1$/m);
        expect(metrics).toMatch(new RegExp(`^gateway_mcp_socket_servers ${name === 'MCP 2026-07-28' ? 1 : 0}$`, 'm'));
      }
      if (index % 2 === 0) socket.socket.terminate();
      else await socket.close();
      await eventually(() => registry.callsRunning === 0 && connections.size === 0, 'the countdown stopped with its caller');
    }
    await timers.stop();
    expect(timers.origins).toEqual([]);
    const metrics = await (await fetch(stack.gateway.http('/metrics'))).text();
    expect(metrics).toMatch(/^gateway_tool_calls_running 0$/m);
    expect(metrics).toMatch(/^gateway_mcp_socket_servers 0$/m);
  });
});
