import { loadGatewayConfig } from '../../config/gateway-config';
import { GatewayError, GatewayErrorCode } from '../errors/gateway-error';
import type { ToolCatalogueChange, ToolOutcome, ToolSpec } from './tool-definition';
import { ToolContentResult } from './tool-content';
import { ToolError } from './tool-error';
import type { InvokeOptions, ToolCallControls } from './tool-invoker';
import { ToolRegistrationError, ToolRegistryService } from './tool-registry.service';

const echo = (overrides: Partial<ToolSpec> = {}): ToolSpec => ({
  name: 'echo',
  description: 'Echoes its text',
  inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'], additionalProperties: false },
  source: 'module',
  handler: ({ text }) => text,
  ...overrides,
});

describe('ToolRegistryService', () => {
  let registry: ToolRegistryService;
  let changes: ToolCatalogueChange[];

  beforeEach(() => {
    registry = new ToolRegistryService(loadGatewayConfig({ SERVER_TOOL_TIMEOUT: '0.2' }));
    changes = [];
    registry.changes.subscribe((change) => changes.push(change));
  });

  afterEach(() => {
    registry.onModuleDestroy();
    registry.onApplicationShutdown();
  });

  /** A call prepared as `options` sees the catalogue, then run: the registry's one way to call. */
  const call = (name: string, args: unknown, options: InvokeOptions = {}, controls?: ToolCallControls) =>
    Promise.resolve(registry.run(registry.prepare(name, args, options.connectionId, options.principal), options, controls));

  describe('registration', () => {
    it('adds a tool with defaults and announces it', () => {
      const tool = registry.register(echo());
      expect(tool).toMatchObject({ name: 'echo', timeoutMs: 200, examples: [], tags: [], source: 'module' });
      expect(Object.isFrozen(tool)).toBe(true);
      expect(registry.get('echo')).toBe(tool);
      expect(changes).toEqual([{ type: 'added', tool, connectionId: undefined }]);
    });

    it.each([
      [{ name: '1bad' }, /must start with a letter/],
      [{ inputSchema: { type: 'array' } }, /must describe an object/],
      [{ inputSchema: { type: 'object', properties: { a: { type: 'bogus' } } } }, /Invalid JSON Schema/],
      [{ outputSchema: { type: 'bogus' } }, /output schema/],
      [{ timeoutMs: 0 }, /timeoutMs/],
      [{ handler: undefined as never }, /no handler/],
    ])('refuses %o', (overrides, reason) => {
      expect(() => registry.register(echo(overrides as Partial<ToolSpec>))).toThrow(reason);
      expect(changes).toEqual([]);
    });

    it('refuses a name already taken, shared or by the same connection', () => {
      registry.register(echo());
      expect(() => registry.register(echo())).toThrow(ToolRegistrationError);
      expect(() => registry.register(echo(), 'conn-1')).toThrow(/already exists/);
      registry.register(echo({ name: 'mine', source: 'client:conn-1' }), 'conn-1');
      expect(() => registry.register(echo({ name: 'mine' }), 'conn-1')).toThrow(/already exists/);
      expect(() => registry.register(echo({ name: 'mine' }), 'conn-2')).not.toThrow();
    });

    it('keeps client tools visible only to their connection', () => {
      registry.register(echo());
      registry.register(echo({ name: 'battery', source: 'client:a' }), 'a');
      expect(registry.list().map((t) => t.name)).toEqual(['echo']);
      expect(registry.list('a').map((t) => t.name)).toEqual(['echo', 'battery']);
      expect(registry.list('b').map((t) => t.name)).toEqual(['echo']);
      expect(registry.get('battery')).toBeUndefined();
      expect(registry.get('battery', 'b')).toBeUndefined();
      expect(registry.get('battery', 'a')?.source).toBe('client:a');
    });

    it('removes tools one by one, by source and by connection, announcing each', () => {
      registry.register(echo({ name: 'up.one', source: 'mcp:up' }));
      registry.register(echo({ name: 'up.two', source: 'mcp:up' }));
      registry.register(echo({ name: 'c1', source: 'client:a' }), 'a');
      registry.register(echo({ name: 'c2', source: 'client:a' }), 'a');
      registry.register(echo());
      changes = [];
      expect(registry.unregisterSource('mcp:up')).toBe(2);
      expect(registry.unregisterConnection('a')).toBe(2);
      expect(registry.unregister('echo')).toBe(true);
      expect(registry.unregister('echo')).toBe(false);
      expect(registry.list('a')).toEqual([]);
      expect(changes.map((c) => [c.type, c.tool.name, c.connectionId])).toEqual([
        ['removed', 'up.one', undefined],
        ['removed', 'up.two', undefined],
        ['removed', 'c1', 'a'],
        ['removed', 'c2', 'a'],
        ['removed', 'echo', undefined],
      ]);
    });
  });

  describe('calls', () => {
    it('validates arguments and runs the handler', async () => {
      registry.register(echo());
      await expect(call('echo', { text: 'hi' })).resolves.toMatchObject({ ok: true, value: 'hi' });
    });

    it('answers a synchronous handler at once, without a promise', () => {
      registry.register(echo());
      expect(registry.run(registry.prepare('echo', { text: 'now' }))).toMatchObject({ ok: true, value: 'now' });
    });

    it('keeps what prepare found wrong for run to report, before any handler runs', () => {
      const handler = jest.fn();
      registry.register(echo({ handler }));
      const prepared = registry.prepare('echo', { text: 1 });
      expect(prepared.problem).toMatchObject({ code: 'INVALID_TOOL_PARAMETERS', message: expect.stringMatching(/"text" must be string/) });
      expect(registry.prepare('nope', {}).problem).toMatchObject({ code: 'TOOL_NOT_FOUND' });
      expect(registry.run(prepared)).toMatchObject({ ok: false, code: 'INVALID_TOOL_PARAMETERS' });
      expect(handler).not.toHaveBeenCalled();
    });

    it('answers an unknown tool without throwing', async () => {
      await expect(call('nope', {})).resolves.toMatchObject({ ok: false, code: 'TOOL_NOT_FOUND' });
    });

    it.each([
      [{}, /missing required argument "text"/],
      [{ text: 1 }, /argument "text" must be string/],
      [{ text: 'x', more: 1 }, /unexpected argument "more"/],
      [[], /must be a JSON object/],
      ['text', /must be a JSON object/],
    ])('refuses arguments %o before the handler runs', async (args, reason) => {
      const handler = jest.fn();
      registry.register(echo({ handler }));
      const outcome = await call('echo', args);
      expect(outcome).toMatchObject({ ok: false, code: 'INVALID_TOOL_PARAMETERS' });
      expect(!outcome.ok && outcome.message).toMatch(reason);
      expect(handler).not.toHaveBeenCalled();
    });

    it('treats missing arguments as an empty object', async () => {
      registry.register(echo({ name: 'noargs', inputSchema: { type: 'object' }, handler: (args) => args }));
      await expect(call('noargs', undefined)).resolves.toMatchObject({ ok: true, value: {} });
    });

    it('unwraps a ToolContentResult into its blocks, with the structured value or else the text as value', async () => {
      const image = { type: 'image', data: 'iVBOR', mimeType: 'image/png' };
      registry.register(echo({ name: 'picture', handler: () => new ToolContentResult([{ type: 'text', text: 'A dot:' }, image]) }));
      registry.register(echo({ name: 'reading', handler: () => new ToolContentResult([{ type: 'text', text: '21 °C' }], { celsius: 21 }) }));
      await expect(call('picture', { text: 'x' })).resolves.toEqual({
        ok: true,
        value: 'A dot:\n[image image/png]',
        content: [{ type: 'text', text: 'A dot:' }, image],
        durationMs: expect.any(Number),
      });
      await expect(call('reading', { text: 'x' })).resolves.toMatchObject({ ok: true, value: { celsius: 21 }, content: [{ text: '21 °C' }] });
    });

    it("reports a ToolError's message and hides other exceptions", async () => {
      registry.register(
        echo({
          name: 'fails',
          handler: () => {
            throw new ToolError('Device offline', { retry: true });
          },
        }),
      );
      registry.register(
        echo({
          name: 'crashes',
          handler: () => {
            throw new Error('password=hunter2 at db.internal');
          },
        }),
      );
      await expect(call('fails', { text: 'x' })).resolves.toMatchObject({
        ok: false,
        code: 'TOOL_EXECUTION_FAILED',
        message: 'Device offline',
        details: { retry: true },
      });
      const crashed = await call('crashes', { text: 'x' });
      expect(crashed).toMatchObject({ ok: false, code: 'TOOL_EXECUTION_FAILED' });
      expect(JSON.stringify(crashed)).not.toMatch(/hunter2/);
    });

    it('passes on a GatewayError with a tool code, such as TOOL_UNAVAILABLE', async () => {
      registry.register(echo({ handler: () => Promise.reject(new GatewayError(GatewayErrorCode.TOOL_UNAVAILABLE, 'Upstream down')) }));
      await expect(call('echo', { text: 'x' })).resolves.toMatchObject({ ok: false, code: 'TOOL_UNAVAILABLE', message: 'Upstream down' });
    });

    it('ends a slow call at its time limit and aborts its signal', async () => {
      let signal: AbortSignal | undefined;
      registry.register(
        echo({
          timeoutMs: 50,
          handler: (_args, context) => {
            signal = context.signal;
            return new Promise(() => undefined);
          },
        }),
      );
      const outcome = await call('echo', { text: 'x' });
      expect(outcome).toMatchObject({ ok: false, code: 'TOOL_TIMEOUT' });
      expect(!outcome.ok && outcome.message).toMatch(/did not finish within 0.05 s/);
      expect(signal?.aborted).toBe(true);
      expect(outcome.durationMs).toBeGreaterThanOrEqual(45);
    });

    it('stops when the caller cancels', async () => {
      registry.register(echo({ handler: () => new Promise(() => undefined) }));
      const caller = new AbortController();
      const pending = call('echo', { text: 'x' }, { signal: caller.signal });
      caller.abort();
      await expect(pending).resolves.toMatchObject({ ok: false, code: 'TOOL_EXECUTION_FAILED', message: expect.stringMatching(/cancelled/) });
    });

    it('does not start a call whose caller already gave up', async () => {
      const handler = jest.fn();
      registry.register(echo({ handler }));
      const outcome = await call('echo', { text: 'x' }, { signal: AbortSignal.abort() });
      expect(outcome).toMatchObject({ ok: false, code: 'TOOL_EXECUTION_FAILED', message: expect.stringMatching(/cancelled/) });
      expect(handler).not.toHaveBeenCalled();
    });

    it('tells when no call runs, and ends the calls still running with TOOL_UNAVAILABLE when told to, stopping their handlers', async () => {
      let signal: AbortSignal | undefined;
      const hangs = (_args: unknown, context: { signal: AbortSignal }) => {
        signal = context.signal;
        return new Promise<never>(() => undefined);
      };
      registry.register(echo({ name: 'hangs', timeoutMs: 60_000, handler: hangs }));
      await expect(registry.whenNoCallsRunning()).resolves.toBeUndefined();
      const pending = call('hangs', { text: 'x' });
      let idle = false;
      void registry.whenNoCallsRunning().then(() => (idle = true));
      await new Promise(setImmediate);
      expect(idle).toBe(false);
      expect(registry.abandonCallsRunning('The gateway is shutting down')).toBe(1);
      await expect(pending).resolves.toMatchObject({ ok: false, code: 'TOOL_UNAVAILABLE', message: 'The gateway is shutting down' });
      expect(signal?.aborted).toBe(true);
      expect(idle).toBe(true);
      expect(registry.callsRunning).toBe(0);
    });

    it('gives the handler the call context', async () => {
      const handler = jest.fn().mockReturnValue('ok');
      registry.register(echo({ handler }));
      await call('echo', { text: 'x' }, { principal: 'p', connectionId: 'c', sessionId: 's' });
      expect(handler).toHaveBeenCalledWith({ text: 'x' }, expect.objectContaining({ principal: 'p', connectionId: 'c', sessionId: 's' }));
    });

    it('calls a client tool only for its own connection', async () => {
      registry.register(echo({ name: 'mine', source: 'client:a' }), 'a');
      await expect(call('mine', { text: 'x' }, { connectionId: 'a' })).resolves.toMatchObject({ ok: true });
      await expect(call('mine', { text: 'x' }, { connectionId: 'b' })).resolves.toMatchObject({ code: 'TOOL_NOT_FOUND' });
    });
  });

  describe('streaming tools', () => {
    /** Settles only when `signal` aborts, as a well-behaved long handler does. */
    const untilAborted = (signal: AbortSignal) =>
      new Promise<never>((_, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true }));

    /** What a streaming caller hears: each piece as `onPartial` gets it, then the outcome. */
    const streamOf = async (name: string, args: unknown, options: InvokeOptions = {}) => {
      const events: ({ type: 'partial'; value: unknown } | { type: 'outcome'; outcome: ToolOutcome })[] = [];
      const outcome = await call(name, args, options, { onPartial: (value) => events.push({ type: 'partial', value }) });
      events.push({ type: 'outcome', outcome });
      return events;
    };

    it('reports each piece as it comes, then the outcome carrying the returned final result', async () => {
      registry.register(
        echo({
          name: 'count',
          async *handler({ text }) {
            yield `${text} 1`;
            yield `${text} 2`;
            return `${text} done`;
          },
        }),
      );
      expect(await streamOf('count', { text: 'n' })).toEqual([
        { type: 'partial', value: 'n 1' },
        { type: 'partial', value: 'n 2' },
        { type: 'outcome', outcome: expect.objectContaining({ ok: true, value: 'n done' }) },
      ]);
    });

    it('ends in the final result: the returned value, else the last piece', async () => {
      registry.register(
        echo({
          name: 'returns',
          async *handler() {
            yield 1;
            return 2;
          },
        }),
      );
      registry.register(
        echo({
          name: 'yields',
          async *handler() {
            yield 1;
            yield 3;
          },
        }),
      );
      registry.register(echo({ name: 'empty', async *handler() {} }));
      await expect(call('returns', { text: 'x' })).resolves.toMatchObject({ ok: true, value: 2 });
      await expect(call('yields', { text: 'x' })).resolves.toMatchObject({ ok: true, value: 3 });
      await expect(call('empty', { text: 'x' })).resolves.toMatchObject({ ok: true, value: undefined });
    });

    it('streams any AsyncIterable a handler returns, and reports a plain result as the outcome alone', async () => {
      registry.register(
        echo({
          name: 'iterable',
          handler: () => ({
            async *[Symbol.asyncIterator]() {
              yield 'a';
              yield 'b';
            },
          }),
        }),
      );
      expect((await streamOf('iterable', { text: 'x' })).map((event) => event.type)).toEqual(['partial', 'partial', 'outcome']);
      registry.register(echo());
      expect(await streamOf('echo', { text: 'hi' })).toEqual([{ type: 'outcome', outcome: expect.objectContaining({ ok: true, value: 'hi' }) }]);
    });

    it('validates before the generator starts, and answers an unknown tool', async () => {
      const started = jest.fn();
      registry.register(
        echo({
          name: 'count',
          async *handler() {
            started();
            yield 1;
          },
        }),
      );
      expect(await streamOf('count', { text: 7 })).toEqual([
        { type: 'outcome', outcome: expect.objectContaining({ ok: false, code: 'INVALID_TOOL_PARAMETERS' }) },
      ]);
      expect(started).not.toHaveBeenCalled();
      expect(await streamOf('nope', {})).toEqual([{ type: 'outcome', outcome: expect.objectContaining({ code: 'TOOL_NOT_FOUND' }) }]);
    });

    it('ends with a failure after the pieces when the generator throws', async () => {
      registry.register(
        echo({
          name: 'breaks',
          async *handler() {
            yield 'first';
            throw new ToolError('Sensor unplugged');
          },
        }),
      );
      expect(await streamOf('breaks', { text: 'x' })).toEqual([
        { type: 'partial', value: 'first' },
        { type: 'outcome', outcome: expect.objectContaining({ ok: false, code: 'TOOL_EXECUTION_FAILED', message: 'Sensor unplugged' }) },
      ]);
    });

    it('holds a whole stream to the time limit, closes the generator and drops later pieces', async () => {
      let closed = false;
      registry.register(
        echo({
          name: 'slow',
          timeoutMs: 50,
          async *handler(_args, { signal }) {
            try {
              yield 'early';
              await untilAborted(signal).catch(() => undefined);
              yield 'too late';
              yield 'later still';
            } finally {
              closed = true;
            }
          },
        }),
      );
      const events = await streamOf('slow', { text: 'x' });
      expect(events).toEqual([
        { type: 'partial', value: 'early' },
        { type: 'outcome', outcome: expect.objectContaining({ code: 'TOOL_TIMEOUT' }) },
      ]);
      await new Promise((resolve) => setImmediate(resolve));
      expect(closed).toBe(true);
    });

    it('stops pulling from an iterable that cannot be closed once the call is over', async () => {
      let pulls = 0;
      const endless: AsyncIterator<number> = {
        next: () => new Promise((resolve) => setTimeout(() => resolve({ done: false, value: (pulls += 1) }), 5)),
      };
      registry.register(echo({ name: 'endless', timeoutMs: 30, handler: () => ({ [Symbol.asyncIterator]: () => endless }) }));
      await expect(call('endless', { text: 'x' })).resolves.toMatchObject({ code: 'TOOL_TIMEOUT' });
      const pullsAtTimeout = pulls;
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(pulls).toBeLessThanOrEqual(pullsAtTimeout + 1);
    });

    it('stops a call its caller cancels, or whose signal aborts, closing its generator', async () => {
      const finished: string[] = [];
      registry.register(
        echo({
          name: 'ticks',
          timeoutMs: 5000,
          async *handler({ text }, { signal }) {
            try {
              yield 'tick';
              await untilAborted(signal);
            } finally {
              finished.push(text as string);
            }
          },
        }),
      );
      const pieces: unknown[] = [];
      const controls: ToolCallControls = { onPartial: (value) => pieces.push(value) };
      const cancelled = call('ticks', { text: 'cancelled' }, {}, controls);
      await new Promise((resolve) => setTimeout(resolve, 10));
      controls.cancel?.();
      await expect(cancelled).resolves.toMatchObject({ ok: false, message: expect.stringMatching(/cancelled/) });
      expect(controls.cancel).toBeUndefined();

      const caller = new AbortController();
      const aborted = streamOf('ticks', { text: 'aborted' }, { signal: caller.signal });
      await new Promise((resolve) => setTimeout(resolve, 10));
      caller.abort();
      expect((await aborted).at(-1)).toEqual({ type: 'outcome', outcome: expect.objectContaining({ message: expect.stringMatching(/cancelled/) }) });

      await new Promise((resolve) => setTimeout(resolve, 10));
      expect(pieces).toEqual(['tick']);
      expect(finished.sort()).toEqual(['aborted', 'cancelled']);
    });
  });
});
