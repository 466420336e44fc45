import { GatewayError, GatewayErrorCode } from '../errors/gateway-error';
import { Logger, LoggerService } from '@nestjs/common';
import { loadGatewayConfig } from '../../config/gateway-config';
import type { EnvironmentInput } from '../../config/environment';
import { ToolError } from '../tools/tool-error';
import type { InvokeOptions } from '../tools/tool-invoker';
import { ToolRegistryService } from '../tools/tool-registry.service';
import { AUDIT_VALUE_MAX_CHARS, clipForAudit } from './audit-clip';
import { ContextCatalogueService } from '../context/context-catalogue.service';
import { AUDIT_LOG_CONTEXT, AuditService } from './audit.service';
import { principalLabel } from './principal-label';

/** Every line written through Nest's logger, with its context. */
class CapturedLog implements LoggerService {
  readonly lines: { level: string; message: unknown; context?: string }[] = [];
  log = (message: unknown, context?: string) => this.lines.push({ level: 'log', message, context });
  error = (message: unknown, context?: string) => this.lines.push({ level: 'error', message, context });
  warn = (message: unknown, context?: string) => this.lines.push({ level: 'warn', message, context });

  get audit(): any[] {
    return this.lines.filter((line) => line.context === AUDIT_LOG_CONTEXT).map((line) => line.message);
  }
}

/** A catalogue of one resource, for the lines of context requests. */
function lampCatalogue(): ContextCatalogueService {
  const catalogue = new ContextCatalogueService();
  catalogue.set({
    id: 'mcp:home',
    label: 'home',
    rank: 0,
    resources: [{ uri: 'file:///lamp', name: 'lamp' }],
    resourceTemplates: [],
    prompts: [],
    readResource: async (uri) => ({ contents: [{ uri, text: 'on' }] }),
    getPrompt: async () => ({ messages: [] }),
    complete: async () => ({ completion: { values: [] } }),
    subscribe: async () => () => undefined,
  });
  return catalogue;
}

describe('AuditService', () => {
  let log: CapturedLog;
  let registry: ToolRegistryService;
  let contexts: ContextCatalogueService;

  function start(settings: EnvironmentInput = {}): AuditService {
    const config = loadGatewayConfig({ SERVER_TOOL_TIMEOUT: '0.2', CLOUD_LOG_LEVEL: 'INFO', ...settings });
    registry = new ToolRegistryService(config);
    registry.register({
      name: 'echo',
      description: 'Echoes its text',
      inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
      source: 'module',
      handler: ({ text }) => text,
    });
    registry.register({
      name: 'slow_fail',
      description: 'Fails after a while',
      inputSchema: { type: 'object' },
      source: 'mcp:home',
      handler: async () => {
        await new Promise((resolve) => setTimeout(resolve, 5));
        throw new ToolError('the lamp is unplugged');
      },
    });
    contexts = lampCatalogue();
    const audit = new AuditService(config, registry, contexts);
    audit.onModuleInit();
    return audit;
  }

  /** A call as a protocol makes one: prepared as its caller sees the catalogue, then run for it. */
  const call = (name: string, args: unknown, options: InvokeOptions = {}) =>
    registry.run(registry.prepare(name, args, options.connectionId, options.principal), options);

  beforeEach(() => {
    log = new CapturedLog();
    Logger.overrideLogger(log);
  });

  afterEach(() => {
    registry.onModuleDestroy();
    Logger.overrideLogger(false);
  });

  it('writes a line per resource read, prompt and completion, found or not', async () => {
    start();
    const signal = new AbortController().signal;
    await contexts.readResource('token:0123456789abcdef', 'file:///lamp', { signal });
    await expect(contexts.readResource('token:0123456789abcdef', 'file:///door', { signal })).rejects.toThrow('Unknown resource');
    expect(log.audit).toEqual([
      { event: 'context_request', token: 'token#01234567', kind: 'resource', target: 'file:///lamp', outcome: 'ok', duration_ms: expect.any(Number) },
      { event: 'context_request', token: 'token#01234567', kind: 'resource', target: 'file:///door', outcome: 'not_found', duration_ms: expect.any(Number) },
    ]);
  });

  it('writes one structured line per tool call, under the Audit context, without arguments by default', async () => {
    start();
    call('echo', { text: 'secret words' }, { principal: 'token:0123456789abcdef', protocol: 'mcp', connectionId: 'c1' });
    expect(log.audit).toEqual([
      {
        event: 'tool_call',
        token: 'token#01234567',
        protocol: 'mcp',
        tool: 'echo',
        source: 'module',
        outcome: 'ok',
        duration_ms: expect.any(Number),
        turn_id: undefined,
        session_id: undefined,
        connection_id: 'c1',
      },
    ]);
    expect(JSON.stringify(log.lines)).not.toContain('secret words');
  });

  it('writes the failure code of a call that failed later, and of one refused before it ran', async () => {
    start();
    await call('slow_fail', {}, { principal: 'anonymous', protocol: 'utcp', turnId: 't-1' });
    await call('no_such_tool', {}, { principal: 'anonymous', protocol: 'litemcp' });
    await call('echo', { text: 5 }, { protocol: 'llm' });
    expect(log.audit.map((line) => [line.tool, line.source, line.protocol, line.token, line.outcome, line.turn_id])).toEqual([
      ['slow_fail', 'mcp:home', 'utcp', 'anonymous', 'TOOL_EXECUTION_FAILED', 't-1'],
      ['no_such_tool', undefined, 'litemcp', 'anonymous', 'TOOL_NOT_FOUND', undefined],
      ['echo', 'module', 'llm', 'none', 'INVALID_TOOL_PARAMETERS', undefined],
    ]);
    expect(log.audit[0].duration_ms).toBeGreaterThanOrEqual(4);
  });

  it('calls made in-process without a protocol are "internal"', async () => {
    start();
    await call('echo', { text: 'x' });
    expect(log.audit[0]).toMatchObject({ protocol: 'internal', token: 'none' });
  });

  it('with AUDIT_LOG_ARGUMENTS, carries arguments and results, clipped', async () => {
    start({ AUDIT_LOG_ARGUMENTS: 'true' });
    const long = 'x'.repeat(5000);
    call('echo', { text: long }, { protocol: 'mcp' });
    await call('slow_fail', { room: 'kitchen' }, { protocol: 'mcp' });
    const [echoed, failed] = log.audit;
    expect(echoed.arguments.length).toBeLessThan(AUDIT_VALUE_MAX_CHARS + 40);
    expect(echoed.arguments).toMatch(/^\{"text":"xxx.*… \[5011 chars\]$/);
    expect(echoed.result).toMatch(/… \[5000 chars\]$/);
    expect(failed).toMatchObject({ arguments: '{"room":"kitchen"}', result: 'the lamp is unplugged' });
  });

  it('writes one line per turn, with the input and answer only with AUDIT_LOG_ARGUMENTS', () => {
    start().turn({
      principal: 'token:fedcba9876543210',
      protocol: 'llm',
      turnId: 't-9',
      sessionId: 's-1',
      outcome: 'ok',
      durationMs: 12.345,
      toolCalls: 2,
      input: 'hi',
      answer: 'hello',
    });
    start({ AUDIT_LOG_ARGUMENTS: 'true' }).turn({
      principal: { name: 'kitchen-speaker' },
      protocol: 'llm',
      turnId: 't-10',
      outcome: 'TIMEOUT',
      durationMs: 1,
      toolCalls: 0,
      input: 'hi',
    });
    expect(log.audit).toEqual([
      { event: 'turn', token: 'token#fedcba98', protocol: 'llm', turn_id: 't-9', session_id: 's-1', outcome: 'ok', duration_ms: 12.3, tool_calls: 2 },
      {
        event: 'turn',
        token: 'kitchen-speaker',
        protocol: 'llm',
        turn_id: 't-10',
        session_id: undefined,
        outcome: 'TIMEOUT',
        duration_ms: 1,
        tool_calls: 0,
        input: 'hi',
      },
    ]);
  });

  it('writes one line per fleet change, with its details when it has some', () => {
    const audit = start();
    audit.fleetChange({ principal: 'token:0123456789abcdef', action: 'rollout_widen', target: 'canary', outcome: 'ok', details: 'percent 10 -> 30' });
    audit.fleetChange({ principal: { name: 'ops' }, action: 'firmware_remove', target: 'fw-1', outcome: 'INVALID_MESSAGE' });
    expect(log.audit).toEqual([
      { event: 'fleet_change', token: 'token#01234567', action: 'rollout_widen', target: 'canary', outcome: 'ok', details: 'percent 10 -> 30' },
      { event: 'fleet_change', token: 'ops', action: 'firmware_remove', target: 'fw-1', outcome: 'INVALID_MESSAGE' },
    ]);
  });

  it('audits a fleet change once it is over: the record it made, or the refusal it met, rethrown', async () => {
    const audit = start();
    await expect(
      audit.auditedFleetChange(
        { principal: { name: 'ops' }, action: 'device_activate', target: 'a code' },
        async () => ({ id: 'kitchen' }),
        (done) => done.id,
      ),
    ).resolves.toEqual({ id: 'kitchen' });
    const refusal = new GatewayError(GatewayErrorCode.NOT_FOUND, 'No such code');
    await expect(
      audit.auditedFleetChange({ principal: { name: 'ops' }, action: 'device_activate', target: 'a code' }, () => Promise.reject(refusal)),
    ).rejects.toBe(refusal);
    await expect(
      audit.auditedFleetChange({ principal: { name: 'ops' }, action: 'device_unbind', target: 'hall' }, () => Promise.reject(new Error('Redis went away'))),
    ).rejects.toThrow('Redis went away');
    expect(log.audit).toEqual([
      { event: 'fleet_change', token: 'ops', action: 'device_activate', target: 'kitchen', outcome: 'ok' },
      { event: 'fleet_change', token: 'ops', action: 'device_activate', target: 'a code', outcome: 'NOT_FOUND' },
      { event: 'fleet_change', token: 'ops', action: 'device_unbind', target: 'hall', outcome: 'INTERNAL_ERROR' },
    ]);
  });

  it('writes key=value text when the log format is text', () => {
    start({ CLOUD_LOG_FORMAT: 'text' });
    call('echo', { text: 'a' }, { principal: 'anonymous', protocol: 'mcp' });
    expect(log.audit[0]).toMatch(/^event=tool_call token=anonymous protocol=mcp tool=echo source=module outcome=ok duration_ms=[\d.]+$/);
  });

  it.each([
    ['AUDIT_LOG=false', { AUDIT_LOG: 'false' }],
    ['a log level above INFO', { CLOUD_LOG_LEVEL: 'WARNING' }],
  ])('writes nothing and does not watch calls with %s', (_name, settings: EnvironmentInput) => {
    const audit = start(settings);
    call('echo', { text: 'a' }, { protocol: 'mcp' });
    audit.turn({ principal: 'anonymous', protocol: 'llm', turnId: 't', outcome: 'ok', durationMs: 1, toolCalls: 0, input: 'x' });
    expect(audit.enabled).toBe(false);
    expect(log.audit).toEqual([]);
  });
});

describe('principalLabel', () => {
  it.each([
    ['token:0123456789abcdef', 'token#01234567'],
    ['anonymous', 'anonymous'],
    [undefined, 'none'],
    [{ name: 'kitchen-speaker' }, 'kitchen-speaker'],
    [{ id: 'token:aaaaaaaabbbbbbbb' }, 'token#aaaaaaaa'],
  ])('%j is %s', (principal, label) => {
    expect(principalLabel(principal as never)).toBe(label);
  });
});

describe('clipForAudit', () => {
  it('keeps short values whole, strings unquoted, and says when it cut', () => {
    expect(clipForAudit({ a: 1 })).toBe('{"a":1}');
    expect(clipForAudit('plain')).toBe('plain');
    expect(clipForAudit('abcdef', 3)).toBe('abc… [6 chars]');
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(clipForAudit(cyclic)).toBe('[not serialisable]');
    expect(clipForAudit(undefined)).toBe('undefined');
  });
});
