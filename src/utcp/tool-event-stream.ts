import type { Response } from 'express';
import { asJson, toolErrorBody, UtcpError } from './utcp.frames';

/** A comment line this often keeps proxies from closing a stream whose tool is quiet for a while. */
const KEEP_ALIVE_MS = 15_000;

/**
 * One call's answer as server-sent events, on `POST /utcp/<tool>?stream=true`: each result,
 * every partial one and then the final one, as a `tool_response` event whose data is the result
 * as JSON; a failure as a `tool_error` event (`{"type":"tool_error","error","code"}`, the frame
 * the WebSocket path sends); then the response ends. The headers go out with the first event,
 * so a call that fails before any result (bad arguments) can still be answered with an HTTP
 * error status instead (see {@link started}).
 *
 * A client that stops reading is cut off once more than `maxBufferedBytes` wait for it (the
 * WebSocket bound, `WS_MAX_BUFFERED_BYTES`), which stops the call: a fast streaming tool filled
 * a gigabyte in five seconds for a client that never read.
 */
export class ToolEventStream {
  private keepAlive?: NodeJS.Timeout;

  constructor(
    private readonly response: Response,
    private readonly maxBufferedBytes: number,
  ) {
    response.once('close', () => clearInterval(this.keepAlive));
  }

  /** Whether the stream is under way: its status and headers are sent. */
  get started(): boolean {
    return this.response.headersSent;
  }

  result(value: unknown): void {
    this.event('tool_response', asJson(value));
  }

  failure(error: UtcpError): void {
    this.event('tool_error', toolErrorBody(error));
  }

  end(): void {
    clearInterval(this.keepAlive);
    if (!this.response.writableEnded) this.response.end();
  }

  private event(name: string, data: unknown): void {
    if (this.response.writableEnded || this.response.destroyed) return;
    if (!this.started) this.open();
    // JSON has no raw line breaks, so the data is always one `data:` line.
    this.response.write(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`);
    if (this.response.writableLength > this.maxBufferedBytes) this.response.destroy();
  }

  private open(): void {
    this.response.status(200).set({
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-cache, no-transform',
      // nginx would otherwise buffer the stream and deliver it at the end.
      'X-Accel-Buffering': 'no',
    });
    this.response.flushHeaders();
    this.keepAlive = setInterval(() => this.response.write(': keep-alive\n\n'), KEEP_ALIVE_MS).unref();
  }
}
