import { Injectable, NestMiddleware } from '@nestjs/common';
import type { IncomingMessage } from 'http';
import { runInTraceContext, traceContextOf } from './trace-context';

/**
 * Makes a client's `traceparent` header the active trace context of its HTTP request, for every
 * HTTP route at once (Streamable HTTP MCP, LiteMCP and UTCP over HTTP): the spans the request
 * causes (its tool calls) become children of the client's span. A request without the header
 * costs one property read.
 */
@Injectable()
export class TraceContextMiddleware implements NestMiddleware {
  use(request: IncomingMessage, _response: unknown, next: () => void): void {
    runInTraceContext(traceContextOf(request.headers), next);
  }
}
