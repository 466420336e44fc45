import { Inject, Injectable, OnApplicationShutdown, OnModuleInit, Optional } from '@nestjs/common';
import { Attributes, context, Span, SpanKind, SpanStatusCode, trace, Tracer } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, NodeTracerProvider, SpanExporter } from '@opentelemetry/sdk-trace-node';
import { GATEWAY_CONFIG, GatewayConfig } from '../../config/gateway-config';
import { principalLabel, PrincipalLike } from '../audit/principal-label';
import type { ToolOutcome } from '../tools/tool-definition';
import type { InvokeOptions, PreparedToolCall, ToolCallWatch, ToolCallWatcher } from '../tools/tool-invoker';
import { ToolRegistryService } from '../tools/tool-registry.service';
import { ContextCatalogueService } from '../context/context-catalogue.service';
import type { ContextRequest, ContextRequestWatch, ContextRequestWatcher } from '../context/context-source';
import { GATEWAY_VERSION } from '../version';
import { otlpTraceExporter } from './otlp-exporter';

/** DI token of a span exporter that replaces the OTLP one (tests, or an application that ships spans its own way). */
export const TRACE_SPAN_EXPORTER = Symbol('TRACE_SPAN_EXPORTER');

/** The attributes of the gateway's spans that OpenTelemetry's conventions have no name for. */
export const TRACE_ATTRIBUTES = {
  protocol: 'gateway.protocol',
  token: 'gateway.token',
  turnId: 'gateway.turn.id',
  sessionId: 'gateway.session.id',
  toolSource: 'gateway.tool.source',
  outcome: 'gateway.outcome',
} as const;

/** A failure as a span shows it: its code (`error.type`) and message. */
export interface SpanFailure {
  code: string;
  message?: string;
}

/**
 * Ends `span` (nothing without one), as failed when `failure` is given. Every span of the
 * gateway ends through here, so they all say the same about how things went.
 */
export function endSpan(span: Span | undefined, outcome: string = 'ok', failure?: SpanFailure): void {
  if (!span) return;
  span.setAttribute(TRACE_ATTRIBUTES.outcome, outcome);
  if (failure) {
    span.setAttribute('error.type', failure.code);
    span.setStatus({ code: SpanStatusCode.ERROR, message: failure.message });
  }
  span.end();
}

let contextManagerSet = false;

/**
 * Spans need the active context to follow async work (a turn's model calls and tool calls, the
 * handler of a tool call and its upstream request). AsyncLocalStorage does it; an application
 * that set up OpenTelemetry itself already has a manager, which is then kept.
 */
function ensureContextManager(): void {
  if (contextManagerSet) return;
  contextManagerSet = true;
  const manager = new AsyncLocalStorageContextManager().enable();
  if (!context.setGlobalContextManager(manager)) manager.disable();
}

/**
 * OpenTelemetry traces of the gateway: a span per LLM-gateway turn (`llm.turn`), per model call
 * in it (`chat <model>`) and per tool call of every protocol (`execute_tool <tool>`, upstream MCP
 * tools included, whose request carries the span on to the upstream in `_meta`). A client's
 * W3C `traceparent` (HTTP headers, a WebSocket upgrade's headers, MCP `params._meta`) is the
 * parent of the spans it causes.
 *
 * Off unless `OTEL_EXPORTER_OTLP_ENDPOINT` (or `..._TRACES_ENDPOINT`) is set; then spans are
 * batched and posted over OTLP/HTTP, and flushed when the app shuts down. Off, there is no
 * tracer: no watcher on the tool path, and every `start*` returns `undefined` at once.
 *
 * The provider is the gateway's own, not registered as the global one, so an application's own
 * OpenTelemetry setup (or a second gateway in the same process) is left alone.
 */
@Injectable()
export class TracingService implements ToolCallWatcher, ContextRequestWatcher, OnModuleInit, OnApplicationShutdown {
  private readonly provider?: NodeTracerProvider;
  private readonly tracer?: Tracer;
  private readonly model: string;

  constructor(
    @Inject(GATEWAY_CONFIG) config: GatewayConfig,
    private readonly registry: ToolRegistryService,
    @Optional() @Inject(TRACE_SPAN_EXPORTER) exporter?: SpanExporter,
    @Optional() private readonly contextCatalogue?: ContextCatalogueService,
  ) {
    this.model = config.llm.model;
    const { tracing } = config;
    if (tracing.tracesUrl === undefined && !exporter) return;
    ensureContextManager();
    this.provider = new NodeTracerProvider({
      resource: resourceFromAttributes({ 'service.name': tracing.serviceName, 'service.version': GATEWAY_VERSION }),
      spanProcessors: [new BatchSpanProcessor(exporter ?? otlpTraceExporter(tracing))],
    });
    this.tracer = this.provider.getTracer('voice-tool-gateway', GATEWAY_VERSION);
  }

  get enabled(): boolean {
    return this.tracer !== undefined;
  }

  onModuleInit(): void {
    if (!this.tracer) return;
    this.registry.watch(this);
    this.contextCatalogue?.watch(this);
  }

  /** A turn's span, child of the active context (the client's, from its upgrade request). */
  startTurn(turnId: string, principal: PrincipalLike, sessionId?: string): Span | undefined {
    return this.tracer?.startSpan(
      'llm.turn',
      {
        kind: SpanKind.SERVER,
        attributes: {
          [TRACE_ATTRIBUTES.protocol]: 'llm',
          [TRACE_ATTRIBUTES.turnId]: turnId,
          [TRACE_ATTRIBUTES.token]: principalLabel(principal),
          ...(sessionId !== undefined && { [TRACE_ATTRIBUTES.sessionId]: sessionId }),
        },
      },
      context.active(),
    );
  }

  /** One request to the model server, child of the active context (the turn's). */
  startModelCall(toolsOffered: number): Span | undefined {
    return this.tracer?.startSpan(
      `chat ${this.model}`,
      {
        kind: SpanKind.CLIENT,
        attributes: { 'gen_ai.operation.name': 'chat', 'gen_ai.request.model': this.model, 'gateway.llm.tools_offered': toolsOffered },
      },
      context.active(),
    );
  }

  /** Runs `run` with `span` active, so what it starts is the span's child; as it is without a span. */
  within<T>(span: Span | undefined, run: () => T): T {
    return span ? context.with(trace.setSpan(context.active(), span), run) : run();
  }

  started(call: PreparedToolCall, options: InvokeOptions): ToolCallWatch {
    const parent = context.active();
    const attributes: Attributes = {
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': call.name,
      [TRACE_ATTRIBUTES.protocol]: options.protocol ?? 'internal',
      [TRACE_ATTRIBUTES.token]: principalLabel(options.principal),
    };
    if (call.entry) attributes[TRACE_ATTRIBUTES.toolSource] = call.entry.tool.source;
    if (options.turnId !== undefined) attributes[TRACE_ATTRIBUTES.turnId] = options.turnId;
    const span = this.tracer!.startSpan(`execute_tool ${call.name}`, { kind: SpanKind.INTERNAL, attributes }, parent);
    const active = trace.setSpan(parent, span);
    return {
      within: (run) => context.with(active, run),
      ended: (outcome: ToolOutcome) => (outcome.ok ? endSpan(span) : endSpan(span, outcome.code, { code: outcome.code, message: outcome.message })),
    };
  }

  /** A resource read, prompt or completion's span, child of the active context; what it sends upstream is its child. */
  contextRequestStarted(request: ContextRequest): ContextRequestWatch {
    const parent = context.active();
    const attributes: Attributes = {
      'gateway.mcp.request': request.kind,
      'gateway.mcp.target': request.target,
      [TRACE_ATTRIBUTES.protocol]: 'mcp',
      [TRACE_ATTRIBUTES.token]: principalLabel(request.principal),
    };
    const span = this.tracer!.startSpan(`mcp.${request.kind} ${request.target}`, { kind: SpanKind.INTERNAL, attributes }, parent);
    const active = trace.setSpan(parent, span);
    return {
      within: (run) => context.with(active, run),
      ended: (outcome) => (outcome === 'ok' ? endSpan(span) : endSpan(span, outcome, { code: outcome })),
    };
  }

  /** Sends every span ended so far. */
  async flush(): Promise<void> {
    await this.provider?.forceFlush();
  }

  /** The last spans go out before the process ends. */
  async onApplicationShutdown(): Promise<void> {
    await this.provider?.shutdown();
  }
}
