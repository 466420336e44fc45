import type { Response } from 'express';
import { EventStream, EventStreamLimits } from '../core/http/event-stream';
import { asJson, toolErrorBody, UtcpError } from './utcp.frames';

/**
 * One call's answer as server-sent events, on `POST /utcp/<tool>?stream=true`: each result,
 * every partial one and then the final one, as a `tool_response` event whose data is the result
 * as JSON; a failure as a `tool_error` event (`{"type":"tool_error","error","code"}`, the frame
 * the WebSocket path sends); then the response ends. The headers go out with the first event,
 * so a call that fails before any result (bad arguments) can still be answered with an HTTP
 * error status instead (see {@link started}).
 *
 * Kept alive and bounded as every event stream of the gateway is (`core/http/event-stream.ts`):
 * a client that stops reading is cut off once more than `WS_MAX_BUFFERED_BYTES` wait for it, which
 * stops the call: a fast streaming tool filled a gigabyte in five seconds for a client that never read.
 */
export class ToolEventStream {
  private readonly stream: EventStream;

  constructor(response: Response, limits: EventStreamLimits) {
    this.stream = new EventStream(response, limits);
  }

  /** Whether the stream is under way: its status and headers are sent. */
  get started(): boolean {
    return this.stream.started;
  }

  result(value: unknown): void {
    // JSON has no raw line breaks, so the data is always one `data:` line.
    this.stream.send('tool_response', JSON.stringify(asJson(value)));
  }

  failure(error: UtcpError): void {
    this.stream.send('tool_error', JSON.stringify(toolErrorBody(error)));
  }

  end(): void {
    this.stream.end();
  }
}
