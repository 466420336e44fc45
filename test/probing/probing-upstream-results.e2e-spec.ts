import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { WebSocketClientTransport } from '@modelcontextprotocol/sdk/client/websocket.js';
import { ChildProcess, spawn } from 'child_process';
import { once } from 'events';
import { join } from 'path';
import { LlmStack, startLlmStack } from '../support/llm-stack';
import { provideGlobalWebSocket } from '../support/sdk-websocket';
import { serversFile, upstreamIn, upstreamStatus } from '../support/upstreams';
import { Utcp01Client } from '../support/utcp01-client';

provideGlobalWebSocket();

const SERVER = join(__dirname, '..', 'support', 'sized-answer-server.mjs');
const MCP_TOKEN = 'mcp-secret';
const MB = 1024 * 1024;
/** The bound these tests set: over the voice turn's 5 MB answer, far under the 50 MB ones. */
const MAX_RESULT_BYTES = 8 * MB;
/**
 * What the process may grow by while the gateway refuses 50 MB answers: the bound, and the 64 KB
 * chunks read through until they are collected (about 25 MB the first time, nothing after);
 * holding one such answer whole took several times its size.
 */
const MEMORY_ALLOWANCE = 64 * MB;

/** How the tool sync words a dropped answer, for server `name`. */
const dropped = (name: string) =>
  new RegExp(`^MCP server "${name}": the answer( of (\\d+) bytes)? is over MCP_UPSTREAM_MAX_RESULT_BYTES \\(${MAX_RESULT_BYTES} bytes\\) and was dropped$`);

/** The most this process's RSS (the gateway runs in it) rose over what it was while `run` ran, sampled every 10 ms. */
async function peakGrowth<T>(run: () => Promise<T>): Promise<{ value: T; growth: number }> {
  const before = process.memoryUsage().rss;
  let peak = before;
  const sample = () => (peak = Math.max(peak, process.memoryUsage().rss));
  const sampler = setInterval(sample, 10);
  try {
    const value = await run();
    sample();
    return { value, growth: peak - before };
  } finally {
    clearInterval(sampler);
  }
}

/** The test server over Streamable HTTP in a process of its own; resolves with its port. */
async function startHttpServer(): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(process.execPath, [SERVER, 'http'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const [line] = (await once(child.stdout!, 'data')) as [Buffer];
  const match = /listening on (\d+)/.exec(line.toString());
  if (!match) throw new Error(`The test server did not start: ${line.toString()}`);
  return { child, port: Number(match[1]) };
}

async function mcpClient(stack: LlmStack): Promise<Client> {
  const client = new Client({ name: 'bounds-e2e', version: '1.0.0' });
  await client.connect(new WebSocketClientTransport(new URL(stack.gateway.ws(`/mcp?token=${MCP_TOKEN}`))));
  return client;
}

describe('upstream answers past MCP_UPSTREAM_MAX_RESULT_BYTES', () => {
  let http: { child: ChildProcess; port: number };
  let file: { path: string; remove(): void };
  let stack: LlmStack;

  beforeAll(async () => {
    http = await startHttpServer();
    file = serversFile({
      local: { command: process.execPath, args: [SERVER] },
      events: { url: `http://127.0.0.1:${http.port}/mcp`, type: 'http' },
      json: { url: `http://127.0.0.1:${http.port}/json`, type: 'http' },
      legacy: { url: `http://127.0.0.1:${http.port}/sse`, type: 'sse' },
    });
    stack = await startLlmStack({
      MCP_SERVERS_FILE: file.path,
      MCP_WS_AUTH_TOKEN: MCP_TOKEN,
      MCP_WS_MAX_CONNECTIONS: 10,
      MCP_UPSTREAM_MAX_RESULT_BYTES: MAX_RESULT_BYTES,
      MCP_UPSTREAM_CALL_TIMEOUT: 60,
    });
    await Promise.all(['local', 'events', 'json', 'legacy'].map((name) => upstreamIn(stack.gateway, name, 'connected')));
  });

  afterAll(async () => {
    await stack?.close();
    http?.child.kill();
    file?.remove();
  });

  beforeEach(() => stack.llm.reset());

  it('fails a 50 MB answer of a stdio upstream alone, clearly, holding a bounded amount; the upstream keeps its tools for every client', async () => {
    const before = await upstreamStatus(stack.gateway, 'local');
    const caller = await mcpClient(stack);
    const { value: answer, growth } = await peakGrowth(() =>
      caller.callTool({ name: 'local.sized', arguments: { bytes: 50 * MB } }, undefined, { timeout: 60_000 }),
    );

    expect(answer).toEqual({ isError: true, content: [{ type: 'text', text: expect.stringMatching(dropped('local')) }] });
    const size = Number(dropped('local').exec((answer.content as { text: string }[])[0].text)![2]);
    expect(size).toBeGreaterThan(50 * MB);
    expect(growth).toBeLessThan(MEMORY_ALLOWANCE);

    expect(await upstreamStatus(stack.gateway, 'local')).toMatchObject({ state: 'connected', pid: before.pid, reconnects: before.reconnects, tools: 2 });
    const other = await mcpClient(stack);
    expect((await other.listTools()).tools.map((tool) => tool.name)).toEqual(expect.arrayContaining(['local.sized', 'local.echo']));
    expect(await other.callTool({ name: 'local.echo', arguments: { text: 'still here' } })).toEqual({ content: [{ type: 'text', text: 'still here' }] });
    expect(await caller.callTool({ name: 'local.sized', arguments: { bytes: 5 } })).toEqual({ content: [{ type: 'text', text: 'xxxxx' }] });
    await Promise.all([caller.close(), other.close()]);
  });

  it('fails four 50 MB answers of HTTP upstreams at once (answer streams, JSON bodies, an SSE session), holding a bounded amount; their tools stay', async () => {
    const caller = await Utcp01Client.connect(stack.gateway.ws('/utcp'));
    const refusalOf = (tool: string) =>
      caller.call(tool, { bytes: 50 * MB }, 60_000).then(
        () => 'answered whole',
        (error: { error?: unknown }) => error.error ?? String(error),
      );
    const { value: refusals, growth } = await peakGrowth(() => Promise.all(['events.sized', 'json.sized', 'legacy.sized', 'json.sized'].map(refusalOf)));

    expect(refusals).toEqual([
      { code: 'TOOL_EXECUTION_FAILED', message: expect.stringMatching(dropped('events')) },
      { code: 'TOOL_EXECUTION_FAILED', message: expect.stringMatching(dropped('json')) },
      { code: 'TOOL_EXECUTION_FAILED', message: expect.stringMatching(dropped('legacy')) },
      { code: 'TOOL_EXECUTION_FAILED', message: expect.stringMatching(dropped('json')) },
    ]);
    expect(growth).toBeLessThan(MEMORY_ALLOWANCE);

    for (const name of ['events', 'json', 'legacy']) {
      expect(await upstreamStatus(stack.gateway, name)).toMatchObject({ state: 'connected', reconnects: 0, tools: 2 });
    }
    const other = await mcpClient(stack);
    expect((await other.listTools()).tools.map((tool) => tool.name)).toEqual(expect.arrayContaining(['events.echo', 'json.echo', 'legacy.echo']));
    expect(await other.callTool({ name: 'json.echo', arguments: { text: 'fine' } })).toEqual({ content: [{ type: 'text', text: 'fine' }] });
    expect(await other.callTool({ name: 'legacy.echo', arguments: { text: 'fine' } })).toEqual({ content: [{ type: 'text', text: 'fine' }] });
    expect((await caller.call('events.echo', { text: 'fine too' })).result).toBe('fine too');
    await Promise.all([caller.close(), other.close()]);
  });

  it('answers a voice turn whose tool returns 5 MB: a short tool_call, the model given a marked part, the device kept', async () => {
    const device = await stack.connect();
    stack.llm.reply({ toolCalls: [{ id: 'big', name: 'local.sized', arguments: { bytes: 5 * MB } }] }, { text: 'That is a long one.' });
    device.send({ type: 'text_input', text: 'Read me the big file' });

    const frames = await device.until('llm_response');
    const notice = frames.find((frame) => frame.type === 'tool_call');
    expect(notice).toMatchObject({ tool_name: 'local.sized', success: true, result: 'x'.repeat(1000), result_truncated: true, result_chars: 5 * MB });
    expect(JSON.stringify(notice).length).toBeLessThan(2000);
    expect(frames.pop()).toMatchObject({ type: 'llm_response', content: 'That is a long one.' });
    expect(await device.next()).toMatchObject({ type: 'status', status: 'idle' });

    const fedBack = stack.llm.requests[1].messages.find((message) => message.role === 'tool')!.content!;
    expect(fedBack).toBe(`${'x'.repeat(16_000)}\n[Cut by the gateway: this result is ${5 * MB} characters long; only its first 16000 are shown.]`);
    expect(JSON.stringify(stack.llm.requests[1]).length).toBeLessThan(64 * 1024);

    device.send({ type: 'ping' });
    expect(await device.next()).toMatchObject({ type: 'pong' });
    await device.close();
  });
});
