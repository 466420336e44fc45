import { Context, context, defaultTextMapGetter, defaultTextMapSetter, ROOT_CONTEXT, trace } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';

/**
 * W3C Trace Context (`traceparent`, `tracestate`), read from what a client sends and written on
 * what the gateway sends upstream. The gateway's own propagator, not the global one, so an
 * application's own OpenTelemetry setup is left as it is.
 */
const propagator = new W3CTraceContextPropagator();

/** Where a client's trace context may be: HTTP headers (the request's, or a WebSocket upgrade's), or MCP's `params._meta`. */
export type TraceCarrier = Readonly<Record<string, unknown>>;

/**
 * The client's span as a parent context, when `carrier` holds a valid `traceparent`; `undefined`
 * otherwise (no header costs one property read; a malformed one is ignored, as W3C says).
 */
export function traceContextOf(carrier: TraceCarrier | undefined): Context | undefined {
  if (typeof carrier?.traceparent !== 'string') return undefined;
  const extracted = propagator.extract(ROOT_CONTEXT, carrier, defaultTextMapGetter);
  return trace.getSpanContext(extracted) ? extracted : undefined;
}

/** Runs `run` with `parent` as the active context (its spans become the parent's children); as it is without one. */
export function runInTraceContext<T>(parent: Context | undefined, run: () => T): T {
  return parent ? context.with(parent, run) : run();
}

/** The W3C fields MCP carries in a request's `params._meta` (a type, not an interface: `_meta` is an open record). */
export type TraceMeta = { traceparent: string; tracestate?: string };

/**
 * The active span as `_meta` fields for a request to an upstream MCP server, so the upstream's
 * spans join the trace; `undefined` when no span is active (tracing off and no client context).
 */
export function activeTraceMeta(): TraceMeta | undefined {
  const active = context.active();
  if (!trace.getSpanContext(active)) return undefined;
  const meta: Record<string, string> = {};
  propagator.inject(active, meta, defaultTextMapSetter);
  return meta.traceparent === undefined ? undefined : (meta as unknown as TraceMeta);
}
