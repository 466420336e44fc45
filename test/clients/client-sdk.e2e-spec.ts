import { execFile } from 'child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { pathToFileURL } from 'url';
import { promisify } from 'util';
import { LlmGatewayClient, LlmGatewayClientOptions, LlmGatewayError, SessionChange } from '../../packages/client-sdk/src';
import { PROJECT_ROOT } from '../support/built';
import { LlmStack, startLlmStack } from '../support/llm-stack';
import { toolResults } from '../support/scripted-llm';
import { TcpProxy } from '../support/tcp-proxy';

const TOKEN = 'device-token';

const battery = (handler: () => unknown) => ({
  name: 'get_battery',
  description: 'The device battery level',
  parameters: { type: 'object', properties: {} },
  handler,
});

describe('client SDK against the real gateway', () => {
  let stack: LlmStack;
  const clients: LlmGatewayClient[] = [];

  beforeAll(async () => {
    stack = await startLlmStack({ AUTH_TOKENS: TOKEN, CLIENT_TOOL_TIMEOUT: 3 });
  });
  afterAll(() => stack.close());
  beforeEach(() => stack.llm.reset());
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((client) => client.close()));
  });

  async function connect(options: Partial<LlmGatewayClientOptions> = {}): Promise<LlmGatewayClient> {
    const client = new LlmGatewayClient({ url: stack.gateway.ws('/'), token: TOKEN, ...options });
    clients.push(client);
    await client.connect();
    return client;
  }

  it("holds a conversation and reports the turn's frames", async () => {
    const client = await connect();
    const statuses: string[] = [];
    client.on('status', (frame) => statuses.push(frame.status));
    expect(await client.sendText('hello')).toBe('You said: hello');
    expect(await client.sendText('again')).toBe('You said: again');
    expect(statuses).toEqual(['processing', 'idle', 'processing', 'idle']);
  });

  it('reports the server tools the model used', async () => {
    const client = await connect();
    const toolCalls: any[] = [];
    client.on('tool_call', (frame) => toolCalls.push(frame));
    stack.llm.reply({ toolCalls: [{ id: 'c1', name: 'calculator', arguments: { a: 2, b: 3 } }] }, (request) => ({
      text: `It is ${toolResults(request).c1}`,
    }));
    expect(await client.sendText('2 + 3?')).toBe('It is 5');
    expect(toolCalls).toEqual([expect.objectContaining({ tool_name: 'calculator', arguments: { a: 2, b: 3, operation: 'add' }, result: 5, success: true })]);
  });

  it('answers device tools with their handlers, and tells the model when a handler fails', async () => {
    const client = await connect({ toolTimeoutMs: 300 });
    const registrations = await client.registerTools([
      battery(() => ({ level: 85 })),
      { ...battery(() => Promise.reject(new Error('The lid is open'))), name: 'open_lid' },
      { ...battery(() => new Promise(() => undefined)), name: 'stuck' },
      { ...battery(() => 1), name: '1bad' },
    ]);
    expect(registrations.map((registration) => registration.status)).toEqual(['registered', 'registered', 'registered', 'failed']);
    expect(registrations[3]).toMatchObject({ code: 'TOOL_REGISTRATION_FAILED', error: expect.stringMatching(/start with a letter/) });
    expect(client.registeredTools).toEqual(['get_battery', 'open_lid', 'stuck']);

    stack.llm.reply(
      {
        toolCalls: [
          { id: 'b', name: 'get_battery', arguments: {} },
          { id: 'l', name: 'open_lid', arguments: {} },
          { id: 's', name: 'stuck', arguments: {} },
        ],
      },
      (request) => ({ text: JSON.stringify(toolResults(request)) }),
    );
    const answer = JSON.parse(await client.sendText('status?'));
    expect(answer).toEqual({
      b: { level: 85 },
      l: { error: { code: 'TOOL_EXECUTION_FAILED', message: 'The lid is open' } },
      s: { error: { code: 'TOOL_EXECUTION_FAILED', message: 'Tool "stuck" did not answer within 300 ms' } },
    });
  });

  it("rejects a failed turn with the gateway's code, and goes on", async () => {
    const client = await connect();
    stack.llm.reply({ fault: 'http500' });
    const error: LlmGatewayError = await client.sendText('hello').catch((failure) => failure);
    expect(error).toBeInstanceOf(LlmGatewayError);
    expect(error.code).toBe('LLM_ERROR');
    expect(JSON.stringify(error)).not.toContain('sk-secret');
    expect(await client.sendText('still there?')).toBe('You said: still there?');
  });

  it('configures the session: the model gets the settings, and cleaning can be turned off', async () => {
    const client = await connect();
    await client.configure({ temperature: 0.1, max_tokens: 77 });
    stack.llm.reply({ text: '**Bold** answer' }, { text: '**Bold** answer' });
    expect(await client.sendText('hi')).toBe('Bold answer');
    await client.configure({ clean_response: false });
    expect(await client.sendText('hi')).toBe('**Bold** answer');
    expect(stack.llm.requests.map(({ temperature, max_tokens }) => [temperature, max_tokens])).toEqual([
      [0.1, 77],
      [0.1, 77],
    ]);
  });

  it('starts, ends and resumes sessions; a client whose session is resumed elsewhere moves on', async () => {
    const first = await connect();
    const original = first.sessionId!;
    await first.configure({ enable_context: true });
    await first.sendText('My name is Ann');
    const changes: SessionChange[] = [];
    first.on('session', (change) => changes.push(change));

    const second = await connect();
    expect(await second.startSession(original)).toBe(original);
    stack.llm.reply((request) => ({ text: request.messages.map((message) => message.content).join(' | ') }));
    expect(await second.sendText('Who am I?')).toContain('My name is Ann');

    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(changes).toEqual([{ sessionId: first.sessionId, previousSessionId: original, reason: 'resumed_elsewhere' }]);
    expect(first.sessionId).not.toBe(original);

    const ended = await second.endSession();
    expect(ended).not.toBe(original);
    await expect(first.startSession(original)).rejects.toMatchObject({ code: 'SESSION_ERROR' });
    const fresh = await first.startSession();
    expect(fresh).not.toBe(original);
    expect(await first.ping()).toBeGreaterThanOrEqual(0);
  });

  it('reconnects after the network drops and resumes the session, its tools and settings', async () => {
    const proxy = await TcpProxy.start('127.0.0.1', stack.gateway.port);
    try {
      const client = await connect({ url: `ws://127.0.0.1:${proxy.port}/`, reconnect: { initialDelayMs: 50, maxDelayMs: 200 } });
      const session = client.sessionId;
      await client.registerTools([battery(() => ({ level: 42 }))]);
      await client.configure({ enable_context: true, clean_response: false });
      await client.sendText('My name is Ann');

      const attempts: number[] = [];
      client.on('reconnecting', ({ attempt }) => attempts.push(attempt));
      proxy.interrupt();
      // Let at least two attempts fail against the cut network, then let the next one in.
      for (let waited = 0; attempts.length < 3 && waited < 5000; waited += 20) await new Promise((resolve) => setTimeout(resolve, 20));
      proxy.restore();

      stack.llm.reply({ toolCalls: [{ id: 'b', name: 'get_battery', arguments: {} }] }, (request) => ({
        text: `**${request.messages
          .filter((message) => message.role === 'user')
          .map((message) => message.content)
          .join(', ')}**: ${toolResults(request).b.level}%`,
      }));
      expect(await client.sendText('Who am I, and my battery?')).toBe('**My name is Ann, Who am I, and my battery?**: 42%');
      expect(client.sessionId).toBe(session);
      expect(client.state).toBe('open');
      expect(attempts.slice(0, 3)).toEqual([1, 2, 3]);
    } finally {
      await proxy.close();
    }
  });

  it('authenticates with the bearer header or the query, and reports a refused token', async () => {
    await connect({ tokenIn: 'header' });
    await connect({ tokenIn: 'query' });
    const refused = (token?: string) =>
      new LlmGatewayClient({ url: stack.gateway.ws('/'), token, reconnect: false }).connect().catch((error: LlmGatewayError) => error);
    expect(await refused()).toMatchObject({ code: 'CONNECT_FAILED', message: expect.stringMatching(/401/) });
    expect(await refused('wrong')).toMatchObject({ code: 'CONNECT_FAILED', message: expect.stringMatching(/403/) });
  });

  it("runs the README's device example as written, from the ESM build in a plain Node process", async () => {
    const sdkRoot = join(PROJECT_ROOT, 'packages', 'client-sdk');
    const build = join(sdkRoot, 'dist', 'esm', 'index.js');
    if (!existsSync(build)) throw new Error(`${build} is missing: run "npm run build:sdk" (npm test builds first)`);
    const readme = readFileSync(join(sdkRoot, 'README.md'), 'utf8');
    const example = /## A device in a dozen lines\s+```js\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(example?.split('\n').filter((line) => line.trim() !== '').length).toBeLessThanOrEqual(12);
    const script = example!
      .replace(`from 'voice-tool-gateway-client'`, `from ${JSON.stringify(pathToFileURL(build).href)}`)
      .replace(`'ws://localhost:9400'`, JSON.stringify(stack.gateway.ws('/')));
    expect(script).not.toContain('voice-tool-gateway-client');
    expect(script).not.toContain('localhost:9400');

    const directory = mkdtempSync(join(tmpdir(), 'sdk-readme-'));
    try {
      writeFileSync(join(directory, 'device.mjs'), script);
      stack.llm.reply({ toolCalls: [{ id: 'b', name: 'get_battery', arguments: {} }] }, (request) => ({
        text: `${toolResults(request).b.level}% left, ${toolResults(request).b.charging ? 'charging' : 'not charging'}`,
      }));
      const { stdout } = await promisify(execFile)(process.execPath, [join(directory, 'device.mjs')], {
        env: { ...process.env, GATEWAY_TOKEN: TOKEN },
        timeout: 20_000,
      });
      expect(stdout).toBe('85 percent left, not charging\n');
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });
});
