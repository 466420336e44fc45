import { OTLPTraceExporter as JsonTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtobufTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import type { SpanExporter } from '@opentelemetry/sdk-trace-node';
import type { GatewayConfig } from '../../config/gateway-config';

/**
 * The OTLP/HTTP exporter for `OTEL_EXPORTER_OTLP_PROTOCOL`: protobuf bodies (the standard's
 * default) or JSON bodies. The URL comes from the gateway's validated config; the exporter
 * reads the other standard variables (`OTEL_EXPORTER_OTLP_HEADERS`, `..._TIMEOUT`,
 * `..._COMPRESSION`) from the environment itself.
 */
export function otlpTraceExporter({ tracesUrl, protocol }: GatewayConfig['tracing']): SpanExporter {
  return protocol === 'http/json' ? new JsonTraceExporter({ url: tracesUrl }) : new ProtobufTraceExporter({ url: tracesUrl });
}
