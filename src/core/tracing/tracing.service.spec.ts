import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, ReadableSpan } from '@opentelemetry/sdk-trace-node';
import { loadGatewayConfig } from '../../config/gateway-config';
import { ToolError } from '../tools/tool-error';
import type { InvokeOptions } from '../tools/tool-invoker';
import { ToolRegistryService } from '../tools/tool-registry.service';
import { activeTraceMeta, runInTraceContext, traceContextOf } from './trace-context';
import { TracingService } from './tracing.service';

const CLIENT_TRACE = '0af7651916cd43dd8448eb211c80319c';
const CLIENT_SPAN = 'b7ad6b7169203331';
const traceparent = `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01`;

describe('TracingService', () => {
  let registry: ToolRegistryService;
  let exporter: InMemorySpanExporter;
  let tracing: TracingService;
  let metaSeen: unknown;

  function start(withExporter = true): void {
    const config = loadGatewayConfig({ SERVER_TOOL_TIMEOUT: '0.2' });
    registry = new ToolRegistryService(config);
    registry.register({
      name: 'upstream_lamp',
      description: 'Stands in for an upstream tool: reads the trace context it would send on',
      inputSchema: { type: 'object' },
      source: 'mcp:home',
      handler: async () => {
        await new Promise((resolve) => setTimeout(resolve, 2));
        metaSeen = activeTraceMeta();
        return 'on';
      },
    });
    registry.register({
      name: 'broken',
      description: 'Always fails',
      inputSchema: { type: 'object' },
      source: 'module',
      handler: () => {
        throw new ToolError('no luck');
      },
    });
    exporter = new InMemorySpanExporter();
    tracing = new TracingService(config, registry, withExporter ? exporter : undefined);
    tracing.onModuleInit();
  }

  /** A call as a protocol makes one: prepared as its caller sees the catalogue, then run for it. */
  const call = (name: string, args: unknown, options: InvokeOptions = {}) =>
    registry.run(registry.prepare(name, args, options.connectionId, options.principal), options);

  const spans = async (): Promise<ReadableSpan[]> => {
    await tracing.flush();
    return exporter.getFinishedSpans();
  };

  afterEach(async () => {
    registry.onModuleDestroy();
    await tracing.onApplicationShutdown();
    metaSeen = undefined;
  });

  it('makes a tool call a child of the client span and hands its own span on to what the handler calls', async () => {
    start();
    const parent = traceContextOf({ traceparent });
    await runInTraceContext(parent, () => call('upstream_lamp', {}, { protocol: 'mcp', principal: 'token:0123456789abcdef' }));
    const [span] = await spans();
    expect(span.name).toBe('execute_tool upstream_lamp');
    expect(span.spanContext().traceId).toBe(CLIENT_TRACE);
    expect(span.parentSpanContext?.spanId).toBe(CLIENT_SPAN);
    expect(span.kind).toBe(SpanKind.INTERNAL);
    expect(span.attributes).toMatchObject({
      'gen_ai.tool.name': 'upstream_lamp',
      'gateway.protocol': 'mcp',
      'gateway.tool.source': 'mcp:home',
      'gateway.token': 'token#01234567',
      'gateway.outcome': 'ok',
    });
    expect(metaSeen).toEqual({ traceparent: `00-${CLIENT_TRACE}-${span.spanContext().spanId}-01` });
  });

  it('nests a turn: model calls and tool calls are children of the turn span', async () => {
    start();
    const turn = tracing.startTurn('t-1', 'anonymous', 's-1');
    await tracing.within(turn, async () => {
      const model = tracing.startModelCall(3);
      model?.end();
      await call('broken', {}, { protocol: 'llm', turnId: 't-1' });
    });
    turn?.end();
    const byName = new Map((await spans()).map((span) => [span.name, span]));
    const turnSpan = byName.get('llm.turn')!;
    expect(turnSpan.parentSpanContext).toBeUndefined();
    expect(turnSpan.attributes).toMatchObject({ 'gateway.turn.id': 't-1', 'gateway.session.id': 's-1' });
    const model = byName.get('chat Qwen3-30B-A3B')!;
    expect(model.kind).toBe(SpanKind.CLIENT);
    expect(model.attributes).toMatchObject({ 'gen_ai.request.model': 'Qwen3-30B-A3B', 'gateway.llm.tools_offered': 3 });
    const tool = byName.get('execute_tool broken')!;
    for (const child of [model, tool]) expect(child.parentSpanContext?.spanId).toBe(turnSpan.spanContext().spanId);
    expect(tool.status).toEqual({ code: SpanStatusCode.ERROR, message: 'no luck' });
    expect(tool.attributes).toMatchObject({ 'error.type': 'TOOL_EXECUTION_FAILED', 'gateway.turn.id': 't-1' });
  });

  it('is off without an endpoint: no tracer, no spans, no watcher on the tool path', async () => {
    start(false);
    expect(tracing.enabled).toBe(false);
    expect(tracing.startTurn('t', 'anonymous')).toBeUndefined();
    expect(tracing.startModelCall(0)).toBeUndefined();
    const watchers = (registry as unknown as { invoker: { watchers: unknown[] } }).invoker.watchers;
    expect(watchers).toEqual([]);
    await call('upstream_lamp', {});
    expect(metaSeen).toBeUndefined();
  });
});

describe('trace context', () => {
  it('reads a valid traceparent from headers or _meta and ignores a missing or malformed one', () => {
    const parent = traceContextOf({ traceparent, tracestate: 'vendor=1' });
    expect(trace.getSpanContext(parent!)).toMatchObject({ traceId: CLIENT_TRACE, spanId: CLIENT_SPAN, isRemote: true });
    expect(traceContextOf({})).toBeUndefined();
    expect(traceContextOf(undefined)).toBeUndefined();
    expect(traceContextOf({ traceparent: 'not-a-traceparent' })).toBeUndefined();
    expect(traceContextOf({ traceparent: `00-${'0'.repeat(32)}-${CLIENT_SPAN}-01` })).toBeUndefined();
    expect(traceContextOf({ traceparent: ['a', 'b'] })).toBeUndefined();
  });

  it('runs work as it is without a parent', () => {
    expect(runInTraceContext(undefined, () => context.active())).toBe(context.active());
  });
});
