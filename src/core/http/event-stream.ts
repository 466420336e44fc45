import type { OutgoingHttpHeaders, ServerResponse } from 'http';
import type { GatewayConfig } from '../../config/gateway-config';

/** How the gateway keeps every server-sent-event stream, whichever protocol writes it. */
export interface EventStreamLimits {
  /** A comment this often (`CLOUD_PING_INTERVAL`) keeps proxies and clients from closing a stream that is quiet for a while. */
  keepAliveMs: number;
  /** Bytes that may wait for a reader (`WS_MAX_BUFFERED_BYTES`, a WebSocket's bound); past it the reader is cut off. */
  maxBufferedBytes: number;
}

export function eventStreamLimits(config: GatewayConfig): EventStreamLimits {
  return { keepAliveMs: config.server.pingIntervalMs, maxBufferedBytes: config.connections.maxBufferedBytes };
}

const KEEP_ALIVE = ': keep-alive\n\n';

type WriteHeadArguments = [statusCode: number, statusMessage?: string | OutgoingHttpHeaders | unknown[], headers?: OutgoingHttpHeaders | unknown[]];

/**
 * Keeps `response` as an event stream once its head says `text/event-stream`, whoever writes its
 * events (the gateway itself, or an SDK's transport it hands the response to): a comment every
 * `keepAliveMs`, and a reader that falls more than `maxBufferedBytes` behind is cut off, the
 * response destroyed, which stops its call as a client going away does. A response whose head
 * says anything else (a JSON answer) is left as it is.
 *
 * Writers that wait for `drain` (a `pipe`, the MCP SDKs' Node adapter) would hold what they have
 * not written in buffers nobody bounds, since the SDKs queue their events without limit: a stream
 * told never to wait keeps every byte waiting for its reader in its own buffer, where it is counted.
 */
export function keepEventStream(response: ServerResponse, limits: EventStreamLimits): void {
  const writeHead = response.writeHead;
  response.writeHead = function (this: ServerResponse, ...args: WriteHeadArguments) {
    const written = (writeHead as (...args: WriteHeadArguments) => ServerResponse).apply(this, args);
    response.writeHead = writeHead;
    if (isEventStream(contentTypeOf(response, args))) watch(response, limits);
    return written;
  } as ServerResponse['writeHead'];
}

function watch(response: ServerResponse, { keepAliveMs, maxBufferedBytes }: EventStreamLimits): void {
  const write = response.write as (...args: unknown[]) => boolean;
  response.write = function (this: ServerResponse, ...args: unknown[]) {
    write.apply(this, args);
    if (this.writableLength > maxBufferedBytes) this.destroy();
    return true;
  } as ServerResponse['write'];
  const keepAlive = setInterval(() => {
    if (!response.writableEnded && !response.destroyed) response.write(KEEP_ALIVE);
  }, keepAliveMs).unref();
  const stop = () => clearInterval(keepAlive);
  response.once('finish', stop).once('close', stop);
}

/** The response's `Content-Type`, as `writeHead` was given it or as it was set before. */
function contentTypeOf(response: ServerResponse, [, second, third]: WriteHeadArguments): unknown {
  const headers = typeof second === 'string' ? third : second;
  if (Array.isArray(headers)) {
    // Raw headers: [name, value, name, value...] or [[name, value]...].
    const pairs = Array.isArray(headers[0])
      ? (headers as unknown[][])
      : headers.flatMap((_, index) => (index % 2 === 0 ? [headers.slice(index, index + 2)] : []));
    const pair = pairs.find(([name]) => String(name).toLowerCase() === 'content-type');
    if (pair) return pair[1];
  } else if (headers) {
    for (const [name, value] of Object.entries(headers)) if (name.toLowerCase() === 'content-type') return value;
  }
  return response.getHeader('content-type');
}

const isEventStream = (type: unknown): boolean => typeof type === 'string' && type.split(';')[0].trim().toLowerCase() === 'text/event-stream';

/**
 * An event stream the gateway writes itself: the head goes out with the first event, so a call
 * that fails before any can still be answered with an HTTP error status instead
 * ({@link started}); kept alive and bounded as {@link keepEventStream} says.
 */
export class EventStream {
  constructor(
    private readonly response: ServerResponse,
    limits: EventStreamLimits,
  ) {
    keepEventStream(response, limits);
  }

  /** Whether the stream is under way: its status and headers are sent. */
  get started(): boolean {
    return this.response.headersSent;
  }

  /** One event; each line of `data` a `data:` line of its own, as the format wants. Nothing once the stream has ended or was cut off. */
  send(event: string, data: string): void {
    const { response } = this;
    if (response.writableEnded || response.destroyed) return;
    if (!this.started) {
      response.writeHead(200, {
        'Content-Type': 'text/event-stream; charset=utf-8',
        'Cache-Control': 'no-cache, no-transform',
        // nginx would otherwise buffer the stream and deliver it at the end.
        'X-Accel-Buffering': 'no',
      });
      response.flushHeaders();
    }
    response.write(`event: ${event}\ndata: ${data.replace(/\r?\n/g, '\ndata: ')}\n\n`);
  }

  end(): void {
    if (!this.response.writableEnded) this.response.end();
  }
}
