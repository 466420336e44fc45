import { mkdtempSync, rmSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { loadGatewayConfig } from '../../config/gateway-config';
import { AccessTokenService } from '../auth/access-token.service';
import { CallsInFlight, TooManyCallsError } from '../limits/calls-in-flight';
import { RateLimitService } from '../limits/rate-limit.service';
import { RateLimitedError } from '../limits/rate-limited.error';
import { ToolCallService } from './tool-call.service';
import { ToolCallOrigin, ToolCallScope } from './tool-call-scope';
import type { ToolCallContext, ToolSpec } from './tool-definition';
import type { ToolCallControls } from './tool-invoker';
import { ToolRegistryService } from './tool-registry.service';
import { GatewayState } from '../state/gateway-state';

const KITCHEN = 'name:kitchen';

const tool = (name: string, handler: ToolSpec['handler']): ToolSpec => ({
  name,
  description: name,
  inputSchema: { type: 'object' },
  source: 'module',
  handler,
});

/** Settles only when `signal` aborts, as a well-behaved long handler does. */
const untilAborted = (signal: AbortSignal) => new Promise<never>((_, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true }));

describe('ToolCallService', () => {
  let dir: string;
  let registry: ToolRegistryService;
  let toolCalls: ToolCallService;
  let seen: ToolCallContext[];

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'vtg-tool-calls-'));
    const tokensFile = join(dir, 'tokens.yaml');
    const kitchen = '{name: kitchen, token: kitchen-secret, tools: ["echo", "wait", "count"], rate_limits: {tool_calls_per_minute: 2}}';
    writeFileSync(tokensFile, `tokens: [${kitchen}]`, { mode: 0o600 });
    const config = loadGatewayConfig({ AUTH_TOKENS_FILE: tokensFile, SERVER_TOOL_TIMEOUT: '5' });
    const tokens = new AccessTokenService(config);
    registry = new ToolRegistryService(config, undefined, tokens);
    toolCalls = new ToolCallService(registry, new RateLimitService(config, tokens, new GatewayState(config)));
    seen = [];
    registry.register(tool('echo', (args, context) => (seen.push(context), args)));
    registry.register(tool('secret', () => 'not for the kitchen'));
    registry.register(tool('wait', (_args, { signal }) => untilAborted(signal)));
    registry.register(
      tool('count', async function* () {
        yield 1;
        yield 2;
      }),
    );
  });

  afterEach(() => {
    registry.onModuleDestroy();
    registry.onApplicationShutdown();
    rmSync(dir, { recursive: true, force: true });
  });

  const connection = (principal?: string, overrides: Partial<ToolCallOrigin> = {}): ToolCallOrigin => ({
    id: 'c-1',
    protocol: 'litemcp',
    principal,
    ...overrides,
  });

  it('answers a synchronous tool at once, without a promise, telling the handler who calls on which connection', () => {
    const scope = ToolCallScope.ofConnection(connection(KITCHEN, { callsInFlight: new CallsInFlight(1) }));
    expect(toolCalls.call(scope, 'echo', { text: 'hi' })).toEqual({ ok: true, value: { text: 'hi' }, durationMs: expect.any(Number) });
    expect(seen[0]).toMatchObject({ principal: KITCHEN, connectionId: 'c-1' });
    expect(scope.callsInFlight?.count).toBe(0);
  });

  it("looks tools up as the scope sees the catalogue: its principal's grant, its connection's own tools", () => {
    registry.register({ ...tool('battery', () => 80), source: 'client:c-1' }, 'c-1');
    const kitchen = ToolCallScope.ofConnection(connection(KITCHEN));
    expect(toolCalls.prepare(kitchen, 'secret', {}).problem).toMatchObject({ code: 'TOOL_NOT_FOUND' });
    expect(toolCalls.call(kitchen, 'battery', {})).toMatchObject({ ok: true, value: 80 });
    const otherConnection = ToolCallScope.ofConnection(connection(KITCHEN, { id: 'c-2' }));
    expect(toolCalls.call(otherConnection, 'battery', {})).toMatchObject({ code: 'TOOL_NOT_FOUND' });
    expect(toolCalls.call(ToolCallScope.ofConnection(connection()), 'secret', {})).toMatchObject({ ok: true });
  });

  it("counts calls against the token's tool_calls_per_minute, but not those of a turn, which was counted as a turn", () => {
    const scope = ToolCallScope.ofConnection(connection(KITCHEN));
    toolCalls.call(scope, 'echo', {});
    toolCalls.call(scope, 'echo', {});
    expect(() => toolCalls.call(scope, 'echo', {})).toThrow(RateLimitedError);
    const turn = ToolCallScope.ofTurn(connection(KITCHEN), { sessionId: 's-1', turnId: 't-1', signal: new AbortController().signal });
    expect(toolCalls.run(turn, toolCalls.prepare(turn, 'echo', {}))).toMatchObject({ ok: true });
    expect(seen.at(-1)).toMatchObject({ sessionId: 's-1', turnId: 't-1' });
  });

  it("holds a place among the connection's calls in flight until the call settles, and refuses a call past them", async () => {
    const scope = ToolCallScope.ofConnection(connection(undefined, { callsInFlight: new CallsInFlight(1) }));
    const controls: ToolCallControls = {};
    const waiting = toolCalls.call(scope, 'wait', {}, controls);
    expect(scope.callsInFlight?.count).toBe(1);
    expect(() => toolCalls.call(scope, 'echo', {})).toThrow(TooManyCallsError);
    controls.cancel?.();
    await expect(waiting).resolves.toMatchObject({ ok: false, code: 'TOOL_EXECUTION_FAILED', message: expect.stringMatching(/cancelled/) });
    expect(scope.callsInFlight?.count).toBe(0);
    expect(toolCalls.call(scope, 'echo', {})).toMatchObject({ ok: true });
  });

  it("stops a running call when the scope's signal aborts: its connection closed", async () => {
    const closes = new AbortController();
    const running = toolCalls.call(ToolCallScope.ofConnection(connection(undefined, { signal: closes.signal })), 'wait', {});
    expect(registry.callsRunning).toBe(1);
    closes.abort(new Error('Connection closed'));
    await expect(running).resolves.toMatchObject({ ok: false });
    expect(registry.callsRunning).toBe(0);
  });

  it("lets a stopped handler act on its signal before the call answers, and still answers with the stop, not the handler's result", async () => {
    const events: string[] = [];
    registry.register(
      tool('tidy', (_args, { signal }) =>
        untilAborted(signal).catch(async () => {
          for (let hop = 0; hop < 20; hop += 1) await Promise.resolve();
          events.push('tidied');
          return 'a result after the stop';
        }),
      ),
    );
    const controls: ToolCallControls = {};
    const running = toolCalls.call(ToolCallScope.ofConnection(connection()), 'tidy', {}, controls);
    const answered = Promise.resolve(running).then((outcome) => (events.push('answered'), outcome));
    controls.cancel?.();
    await expect(answered).resolves.toMatchObject({ ok: false, message: expect.stringMatching(/cancelled/) });
    expect(events).toEqual(['tidied', 'answered']);
  });

  it('answers a stopped handler that never settles on the next turn of the event loop', async () => {
    registry.register(tool('deaf', (_args, { signal }) => (void signal, new Promise(() => undefined))));
    const controls: ToolCallControls = {};
    const running = toolCalls.call(ToolCallScope.ofConnection(connection()), 'deaf', {}, controls);
    controls.cancel?.();
    await expect(running).resolves.toMatchObject({ ok: false, message: expect.stringMatching(/cancelled/) });
    expect(registry.callsRunning).toBe(0);
  });

  it("passes a streaming tool's pieces to onPartial and lets the caller cancel the call", async () => {
    const pieces: unknown[] = [];
    const scope = ToolCallScope.ofConnection(connection());
    const streamed = toolCalls.call(scope, 'count', {}, { onPartial: (piece) => pieces.push(piece) });
    await expect(streamed).resolves.toMatchObject({ ok: true, value: 2 });
    expect(pieces).toEqual([1, 2]);

    const controls: ToolCallControls = {};
    const cancelled = toolCalls.call(scope, 'wait', {}, controls);
    controls.cancel?.();
    await expect(cancelled).resolves.toMatchObject({ ok: false, message: expect.stringMatching(/cancelled/) });
  });
});
