import { createServer, IncomingMessage, Server } from 'http';
import type { AddressInfo } from 'net';

/** One span as an OTLP/HTTP JSON body carries it, attributes flattened to plain values. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
  status: { code?: number; message?: string };
  /** The resource's attributes (`service.name`...). */
  resource: Record<string, unknown>;
}

/** One POST the receiver took. */
export interface ReceivedExport {
  path: string;
  contentType: string;
  body: Buffer;
}

type AnyValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number };
const valueOf = (value: AnyValue): unknown =>
  value.stringValue ?? (value.intValue !== undefined ? Number(value.intValue) : (value.boolValue ?? value.doubleValue));
const attributesOf = (list: { key: string; value: AnyValue }[] = []): Record<string, unknown> =>
  Object.fromEntries(list.map(({ key, value }) => [key, valueOf(value)]));

/**
 * An OpenTelemetry collector's OTLP/HTTP traces endpoint for tests: a plain HTTP server on
 * 127.0.0.1 that keeps every export it is sent (`POST /v1/traces`) and reads the JSON ones
 * (`application/json`, the http/json protocol) into spans.
 */
export class OtlpReceiver {
  readonly exports: ReceivedExport[] = [];

  private constructor(private readonly server: Server) {}

  static async start(): Promise<OtlpReceiver> {
    const server = createServer();
    const receiver = new OtlpReceiver(server);
    server.on('request', (request: IncomingMessage, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        receiver.exports.push({ path: request.url ?? '', contentType: request.headers['content-type'] ?? '', body: Buffer.concat(chunks) });
        response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return receiver;
  }

  /** The endpoint, as `OTEL_EXPORTER_OTLP_ENDPOINT` takes it. */
  get endpoint(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** Every span of every JSON export so far. */
  get spans(): ReceivedSpan[] {
    return this.exports
      .filter((received) => received.contentType.startsWith('application/json'))
      .flatMap((received) => JSON.parse(received.body.toString('utf8')).resourceSpans as any[])
      .flatMap((resourceSpans) =>
        (resourceSpans.scopeSpans as any[]).flatMap((scope) =>
          (scope.spans as any[]).map((span): ReceivedSpan => ({
            traceId: span.traceId,
            spanId: span.spanId,
            parentSpanId: span.parentSpanId || undefined,
            name: span.name,
            kind: span.kind,
            attributes: attributesOf(span.attributes),
            status: span.status ?? {},
            resource: attributesOf(resourceSpans.resource?.attributes),
          })),
        ),
      );
  }

  /** The one span named `name` (fails when there is none or more than one). */
  span(name: string, where: (span: ReceivedSpan) => boolean = () => true): ReceivedSpan {
    const found = this.spans.filter((span) => span.name === name && where(span));
    if (found.length !== 1) throw new Error(`Expected one span "${name}", found ${found.length}: ${this.spans.map((s) => s.name).join(', ')}`);
    return found[0];
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
