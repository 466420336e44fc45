import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { WebSocketClientTransport } from '@modelcontextprotocol/sdk/client/websocket.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import type Redis from 'ioredis';
import { mkdtempSync, rmSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import type { RunningGateway } from '../support/gateway';
import { LiteMcpClient } from '../support/litemcp-client';
import { AuthFailed, EnvelopeClient } from '../support/mcp-envelope-client';
import { LlmStack, startLlmStack } from '../support/llm-stack';
import { inspector, removeKeys, TEST_REDIS_URL, uniquePrefix } from '../support/redis';
import { provideGlobalWebSocket } from '../support/sdk-websocket';
import { refusal, TestSocket } from '../support/test-socket';
import { Utcp01Client, UtcpRequestFailed } from '../support/utcp01-client';

provideGlobalWebSocket();

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A tokens file in a directory of its own (watched as a directory), not readable by others. */
class TokensFile {
  readonly dir = mkdtempSync(join(tmpdir(), 'vtg-tokens-e2e-'));
  readonly path = join(this.dir, 'tokens.yaml');

  constructor(text: string) {
    this.write(text);
  }

  write(text: string): void {
    writeFileSync(this.path, text, { mode: 0o600 });
  }

  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

const TOKENS = `
tokens:
  - name: kitchen
    token: kitchen-secret
    tools: [get_current_time]
  - name: mcp-only
    token: mcp-only-secret
    protocols: [mcp]
  - name: quiet
    token: quiet-secret
    llm: false
  - name: single
    token: single-secret
    max_connections: 1
`;

async function mcpClient(transport: Transport): Promise<Client> {
  const client = new Client({ name: 'tokens-e2e', version: '1.0.0' });
  await client.connect(transport);
  return client;
}

const overWebSocket = (gateway: RunningGateway, token: string) => new WebSocketClientTransport(new URL(gateway.ws(`/mcp?token=${encodeURIComponent(token)}`)));
const overHttp = (gateway: RunningGateway, token: string) =>
  new StreamableHTTPClientTransport(new URL(gateway.http('/mcp')), { requestInit: { headers: { Authorization: `Bearer ${token}` } } });

const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

describe('a token limited to get_current_time', () => {
  let file: TokensFile;
  let stack: LlmStack;
  let gateway: RunningGateway;

  beforeAll(async () => {
    file = new TokensFile(TOKENS);
    stack = await startLlmStack({ AUTH_TOKENS_FILE: file.path, AUTH_TOKENS: 'full-secret', MCP_WS_MAX_CONNECTIONS: 10 });
    gateway = stack.gateway;
  });
  afterAll(async () => {
    await stack.close();
    file.remove();
  });

  it.each([
    ['plain WebSocket', overWebSocket],
    ['Streamable HTTP', overHttp],
  ])('lists and calls only it over MCP (%s), and is told any other tool is unknown', async (_name, transport) => {
    const client = await mcpClient(transport(gateway, 'kitchen-secret'));
    try {
      expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(['get_current_time']);
      const time = await client.callTool({ name: 'get_current_time', arguments: {} });
      expect(time.isError).toBeFalsy();
      const refused = await client.callTool({ name: 'calculator', arguments: { a: 1, b: 2 } }).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(McpError);
      expect(refused).toMatchObject({ code: ErrorCode.InvalidParams, message: expect.stringContaining('Unknown tool "calculator"') });
    } finally {
      await client.close();
    }
  });

  it('sees the whole catalogue with an AUTH_TOKENS token', async () => {
    const client = await mcpClient(overWebSocket(gateway, 'full-secret'));
    try {
      expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(expect.arrayContaining(['get_current_time', 'calculator', 'get_weather']));
    } finally {
      await client.close();
    }
  });

  it('gets and calls only it over LiteMCP, on WebSocket and HTTP', async () => {
    const lite = await LiteMcpClient.connect(gateway.ws('/litemcp/get_current_time'), 'kitchen-secret');
    try {
      expect((await lite.info()).name).toBe('get_current_time');
      expect((await lite.call('get_current_time', [])).response.error).toBe(false);
    } finally {
      lite.close();
    }
    expect((await refusal(TestSocket.open(gateway.ws('/litemcp/calculator'), { headers: bearer('kitchen-secret') }))).status).toBe(404);
    expect((await fetch(gateway.http('/litemcp/calculator'), { headers: bearer('kitchen-secret') })).status).toBe(404);
    const post = await fetch(gateway.http('/litemcp/calculator'), {
      method: 'POST',
      headers: { ...bearer('kitchen-secret'), 'Content-Type': 'application/json' },
      body: JSON.stringify({ version: [1, 0, 0], tool: 'calculator', arguments: ['1', '2'] }),
    });
    expect(post.status).toBe(404);
    expect((await fetch(gateway.http('/litemcp/calculator'), { headers: bearer('full-secret') })).status).toBe(200);
  });

  it('finds only it in the UTCP manual (HTTP and WebSocket discovery) and /tools, and cannot call another tool over UTCP', async () => {
    const manual = await Utcp01Client.discoverOverHttp(gateway.http('/utcp'), 'kitchen-secret');
    expect(manual.tools.map((tool: { name: string }) => tool.name)).toEqual(['get_current_time']);
    const tools = (await (await fetch(gateway.http('/tools'), { headers: bearer('kitchen-secret') })).json()) as { tools: { name: string }[] };
    expect(tools.tools.map((tool: { name: string }) => tool.name)).toEqual(['get_current_time']);

    const utcp = await Utcp01Client.connect(gateway.ws('/utcp'), { token: 'kitchen-secret', via: 'message' });
    try {
      const discovered = await utcp.discover();
      expect(discovered.tools.map((tool: { name: string }) => tool.name)).toEqual(['get_current_time']);
      expect((await utcp.call('get_current_time', {})).result).toBeDefined();
      const failed = await utcp.call('calculator', { a: 1, b: 2 }).catch((error: unknown) => error);
      // A tool the token may not see is, to it, a tool that does not exist.
      expect(failed).toBeInstanceOf(UtcpRequestFailed);
      expect(failed).toMatchObject({ error: { code: 'TOOL_NOT_FOUND', message: 'Unknown tool "calculator"' } });
    } finally {
      await utcp.close();
    }
    expect((await refusal(TestSocket.open(gateway.ws('/utcp/calculator?token=kitchen-secret')))).status).toBe(404);
    const overHttp = (tool: string) =>
      fetch(gateway.http(`/utcp/${tool}`), { method: 'POST', headers: { ...bearer('kitchen-secret'), 'Content-Type': 'application/json' }, body: '{}' });
    expect((await overHttp('calculator')).status).toBe(404);
    expect((await overHttp('get_current_time')).status).toBe(200);
  });

  it('may not read /metrics, which needs a token with full access', async () => {
    expect((await fetch(gateway.http('/metrics'), { headers: bearer('kitchen-secret') })).status).toBe(403);
    expect((await fetch(gateway.http('/metrics'), { headers: bearer('full-secret') })).status).toBe(200);
  });

  it('is the only tool offered to the model in an LLM turn, and a call the model makes to another tool is not found', async () => {
    stack.llm.reset();
    stack.llm.reply({ toolCalls: [{ id: 'c1', name: 'calculator', arguments: { a: 1, b: 2 } }] }, { text: 'I cannot calculate.' });
    const device = await stack.connect('/', bearer('kitchen-secret'));
    try {
      device.send({ type: 'text_input', text: 'what is 1 + 2?' });
      const frames = await device.until('status', 'idle');
      expect(stack.llm.requests[0].tools?.map((tool) => tool.function.name)).toEqual(['get_current_time']);
      const toolCall = frames.find((frame) => frame.type === 'tool_call');
      expect(toolCall).toMatchObject({ tool_name: 'calculator', success: false });
      expect(JSON.stringify(toolCall)).toContain('TOOL_NOT_FOUND');
      expect(frames.find((frame) => frame.type === 'llm_response')).toMatchObject({ content: 'I cannot calculate.' });
    } finally {
      await device.close();
    }
  });

  it('refuses a route its protocols leave out with 403, at the upgrade and on HTTP', async () => {
    const refused = await refusal(TestSocket.open(gateway.ws('/'), { headers: bearer('mcp-only-secret') }));
    expect(refused.status).toBe(403);
    expect(refused.body).toContain('may not use llm');
    expect((await refusal(TestSocket.open(gateway.ws('/litemcp/get_current_time'), { headers: bearer('mcp-only-secret') }))).status).toBe(403);
    expect((await fetch(gateway.http('/utcp'), { headers: bearer('mcp-only-secret') })).status).toBe(403);
    expect((await fetch(gateway.http('/litemcp/get_current_time'), { headers: bearer('mcp-only-secret') })).status).toBe(403);
    const utcp = await Utcp01Client.connect(gateway.ws('/utcp'));
    utcp['socket'].send({ type: 'auth', token: 'mcp-only-secret' });
    const answer = await utcp['socket'].next();
    expect(answer).toMatchObject({ type: 'error', error: { code: 'FORBIDDEN', message: expect.stringContaining('may not use utcp') } });
    const client = await mcpClient(overHttp(gateway, 'mcp-only-secret'));
    expect((await client.listTools()).tools.length).toBeGreaterThan(1);
    await client.close();
    const envelope = await EnvelopeClient.connect(gateway.ws('/mcp'), 'mcp-only-secret');
    await envelope.close();
  });

  it("refuses the MCP envelope's auth to a token whose protocols leave MCP out", async () => {
    const failed = await EnvelopeClient.connect(gateway.ws('/mcp'), 'quiet-secret').then(
      async (client) => (await client.close(), undefined),
      (error: unknown) => error,
    );
    expect(failed).toBeUndefined();
    writeFileSync(file.path, TOKENS.replace('llm: false', 'llm: false\n    protocols: [llm]'), { mode: 0o600 });
    try {
      const deadline = Date.now() + 5000;
      let refused: unknown;
      while (Date.now() < deadline && !(refused instanceof AuthFailed)) {
        refused = await EnvelopeClient.connect(gateway.ws('/mcp'), 'quiet-secret').then(
          async (client) => (await client.close(), undefined),
          (error: unknown) => error,
        );
        if (!(refused instanceof AuthFailed)) await sleep(50);
      }
      expect(refused).toBeInstanceOf(AuthFailed);
      expect((refused as AuthFailed).answer).toMatchObject({ status: 'failed', error: { message: expect.stringContaining('may not use mcp') } });
    } finally {
      file.write(TOKENS);
      // Back to the first file before the next test: the envelope lets the token in again.
      const deadline = Date.now() + 5000;
      for (let restored = false; !restored && Date.now() < deadline; await sleep(50)) {
        restored = await EnvelopeClient.connect(gateway.ws('/mcp'), 'quiet-secret').then(
          async (client) => (await client.close(), true),
          () => false,
        );
      }
    }
  });

  it('refuses LLM-gateway turns to a token with llm: false, with an error frame', async () => {
    const device = await stack.connect('/', bearer('quiet-secret'));
    try {
      device.send({ type: 'text_input', text: 'hello' });
      const frames = await device.until('status', 'idle');
      expect(frames.find((frame) => frame.type === 'error')).toMatchObject({ code: 'FORBIDDEN', message: expect.stringContaining('llm: false') });
    } finally {
      await device.close();
    }
  });

  it('refuses a connection past max_connections with 429 at the upgrade, and lets one in again once one closes', async () => {
    const first = await stack.connect('/', bearer('single-secret'));
    const refused = await refusal(TestSocket.open(gateway.ws('/litemcp/get_current_time'), { headers: bearer('single-secret') }));
    expect(refused.status).toBe(429);
    expect(refused.body).toContain('max_connections');
    await first.close();
    const again = await stack.connect('/', bearer('single-secret'));
    await again.close();
  });
});

const LIMITED = `
tokens:
  - name: turns
    token: turns-secret
    rate_limits: { turns_per_minute: 1 }
  - name: mcp-calls
    token: mcp-calls-secret
    rate_limits: { tool_calls_per_minute: 1 }
  - name: lite-calls
    token: lite-calls-secret
    rate_limits: { tool_calls_per_minute: 1 }
  - name: utcp-calls
    token: utcp-calls-secret
    rate_limits: { tool_calls_per_minute: 1 }
`;

/** The window of every rate-limit test: short, so recovery is seen without a minute's sleep. */
const WINDOW_S = 1;

async function turn(client: Awaited<ReturnType<LlmStack['connect']>>, text: string): Promise<any> {
  client.send({ type: 'text_input', text });
  const frames = await client.until('status', 'idle');
  return frames.find((frame) => frame.type === 'llm_response' || frame.type === 'error');
}

const litePost = (gateway: RunningGateway, token: string) =>
  fetch(gateway.http('/litemcp/calculator'), {
    method: 'POST',
    headers: { ...bearer(token), 'Content-Type': 'application/json' },
    body: JSON.stringify({ version: [1, 0, 0], tool: 'calculator', arguments: ['2', '3'] }),
  });

describe('rate limits', () => {
  let file: TokensFile;
  let stack: LlmStack;

  beforeAll(async () => {
    file = new TokensFile(LIMITED);
    stack = await startLlmStack({ AUTH_TOKENS_FILE: file.path, RATE_LIMIT_WINDOW: WINDOW_S, MCP_WS_MAX_CONNECTIONS: 10 });
  });
  afterAll(async () => {
    await stack.close();
    file.remove();
  });

  it('answers each protocol in its vocabulary with the wait, and lets requests through again after the window', async () => {
    const { gateway } = stack;
    const device = await stack.connect('/', bearer('turns-secret'));
    const mcp = await mcpClient(overWebSocket(gateway, 'mcp-calls-secret'));
    const utcp = await Utcp01Client.connect(gateway.ws('/utcp'), { token: 'utcp-calls-secret', via: 'header' });
    try {
      expect(await turn(device, 'one')).toMatchObject({ type: 'llm_response' });
      expect(await turn(device, 'two')).toMatchObject({
        type: 'error',
        code: 'RATE_LIMITED',
        details: { retry_after_s: 1 },
        message: expect.stringContaining('at most 1 turns per 1 s'),
        turn_id: expect.any(String),
      });

      const call = () => mcp.callTool({ name: 'calculator', arguments: { a: 2, b: 3 } });
      expect((await call()).isError).toBeFalsy();
      const limited = await call().catch((error: unknown) => error);
      expect(limited).toBeInstanceOf(McpError);
      expect(limited).toMatchObject({ code: -32029, data: { retry_after_s: 1 } });

      expect((await litePost(gateway, 'lite-calls-secret')).status).toBe(200);
      const refused = await litePost(gateway, 'lite-calls-secret');
      expect(refused.status).toBe(429);
      expect(refused.headers.get('retry-after')).toBe('1');
      expect(JSON.stringify(await refused.json())).toContain('Rate limit reached');
      // LiteMCP has no error frame for a call: its result says so, with the wait in its text.
      const lite = await LiteMcpClient.connect(gateway.ws('/litemcp/calculator'), 'lite-calls-secret');
      const liteLimited = await lite.call('calculator', ['2', '3']);
      lite.close();
      expect(liteLimited.response).toMatchObject({
        error: true,
        content: [{ type: 'text', data: expect.stringMatching(/Rate limit reached.*try again in 1 s/) }],
      });

      expect((await utcp.call('calculator', { a: 2, b: 3 })).result).toBe(5);
      const overHttp = await fetch(gateway.http('/utcp/calculator'), {
        method: 'POST',
        headers: { ...bearer('utcp-calls-secret'), 'Content-Type': 'application/json' },
        body: JSON.stringify({ a: 2, b: 3 }),
      });
      expect(overHttp.status).toBe(429);
      expect(overHttp.headers.get('retry-after')).toBe('1');
      const utcpLimited = await utcp.call('calculator', { a: 2, b: 3 }).catch((error: unknown) => error);
      expect(utcpLimited).toBeInstanceOf(UtcpRequestFailed);
      expect((utcpLimited as UtcpRequestFailed & { error: unknown }).error).toMatchObject({ code: 'RATE_LIMITED', details: { retry_after_s: 1 } });

      await sleep(WINDOW_S * 1000 + 100);
      expect(await turn(device, 'three')).toMatchObject({ type: 'llm_response' });
      expect((await call()).isError).toBeFalsy();
      expect((await litePost(gateway, 'lite-calls-secret')).status).toBe(200);
      expect((await utcp.call('calculator', { a: 2, b: 3 })).result).toBe(5);
    } finally {
      await Promise.all([device.close(), mcp.close(), utcp.close()]);
    }
  });
});

describe('rate limits across two instances sharing Redis', () => {
  const prefix = uniquePrefix();
  let redis: Redis;
  let file: TokensFile;

  beforeAll(async () => {
    redis = await inspector();
    file = new TokensFile('tokens: [{name: fleet, token: fleet-secret, rate_limits: {turns_per_minute: 2, tool_calls_per_minute: 2}}]');
  });
  afterAll(async () => {
    await removeKeys(redis, prefix);
    redis.disconnect();
    file.remove();
  });

  it('counts one limit for the token on both, and recovers after the window', async () => {
    const settings = { AUTH_TOKENS_FILE: file.path, RATE_LIMIT_WINDOW: 2, REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: prefix };
    const [a, b] = await Promise.all([startLlmStack(settings), startLlmStack(settings)]);
    try {
      const onA = await a.connect('/', bearer('fleet-secret'));
      const onB = await b.connect('/', bearer('fleet-secret'));
      expect(await turn(onA, 'one')).toMatchObject({ type: 'llm_response' });
      expect(await turn(onB, 'two')).toMatchObject({ type: 'llm_response' });
      const limited = await turn(onA, 'three');
      expect(limited).toMatchObject({ type: 'error', code: 'RATE_LIMITED' });
      expect(limited.details.retry_after_s).toBeGreaterThanOrEqual(1);
      expect(limited.details.retry_after_s).toBeLessThanOrEqual(2);

      expect((await litePost(a.gateway, 'fleet-secret')).status).toBe(200);
      expect((await litePost(b.gateway, 'fleet-secret')).status).toBe(200);
      const refused = await litePost(a.gateway, 'fleet-secret');
      expect(refused.status).toBe(429);
      const toolsFreeAt = Date.now() + Number(refused.headers.get('retry-after')) * 1000;
      expect(await redis.keys(`${prefix}rate:*`)).toEqual(expect.arrayContaining([`${prefix}rate:turns:fleet`, `${prefix}rate:tools:fleet`]));

      // Both windows end within their announced waits (the tools' window opened a little later).
      await sleep(Math.max(0, toolsFreeAt - Date.now()) + 100);
      expect(await turn(onB, 'four')).toMatchObject({ type: 'llm_response' });
      expect((await litePost(b.gateway, 'fleet-secret')).status).toBe(200);
      await Promise.all([onA.close(), onB.close()]);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});

describe('reloading the tokens file', () => {
  it('changes what a live token may do, keeps the previous tokens when the new file is bad, and takes everything from a removed token', async () => {
    const file = new TokensFile('tokens: [{name: agent, token: agent-secret, tools: [get_current_time]}, {name: spare, token: spare-secret}]');
    const stack = await startLlmStack({ AUTH_TOKENS_FILE: file.path, MCP_WS_MAX_CONNECTIONS: 10 });
    const client = await mcpClient(overWebSocket(stack.gateway, 'agent-secret'));
    const names = async () => (await client.listTools()).tools.map((tool) => tool.name).sort();
    /** Polls (bounded) until the listing is `expected`: the reload happens after the watcher's debounce. */
    const eventually = async (expected: string[]) => {
      const deadline = Date.now() + 5000;
      while (Date.now() < deadline && JSON.stringify(await names()) !== JSON.stringify(expected)) await sleep(50);
      expect(await names()).toEqual(expected);
    };
    try {
      expect(await names()).toEqual(['get_current_time']);
      file.write('tokens: [{name: agent, token: agent-secret, tools: [get_current_time, "calc*"]}, {name: spare, token: spare-secret}]');
      await eventually(['calculator', 'get_current_time']);
      expect((await client.callTool({ name: 'calculator', arguments: { a: 2, b: 3 } })).structuredContent ?? true).toBeTruthy();

      file.write('tokens: [{name: agent, token: agent-secret, tools: "everything"}]');
      await sleep(600);
      expect(await names()).toEqual(['calculator', 'get_current_time']);
      expect((await fetch(stack.gateway.http('/tools'), { headers: bearer('spare-secret') })).status).toBe(200);

      file.write('tokens: [{name: spare, token: spare-secret}]');
      await eventually([]);
      expect((await fetch(stack.gateway.http('/tools'), { headers: bearer('agent-secret') })).status).toBe(403);
    } finally {
      await client.close();
      await stack.close();
      file.remove();
    }
  });
});
