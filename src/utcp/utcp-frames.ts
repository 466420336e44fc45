import { concatMap, defer, map, OperatorFunction } from 'rxjs';
import type { ToolFailure, ToolStreamEvent } from '../core/tools/tool-definition';
import { resultOf } from './utcp.mapper';
import type { UtcpError, UtcpManual, UtcpRequestId, UtcpServerFrame, UtcpToolFrame } from './utcp.types';

/** Longest request id the gateway echoes; ids are correlation keys, not payloads. */
const MAX_REQUEST_ID_LENGTH = 256;

/** Whether `value` can be a request id: a non-empty string (up to 256 characters) or a finite number. */
export function isRequestId(value: unknown): value is UtcpRequestId {
  return (
    (typeof value === 'string' && value.length > 0 && value.length <= MAX_REQUEST_ID_LENGTH) ||
    (typeof value === 'number' && Number.isFinite(value))
  );
}

/** The frame's `id` when it has a usable one, for echoing in an answer; `null` otherwise. */
export function requestIdOf(frame: unknown): UtcpRequestId | null {
  const id = (frame as { id?: unknown } | null)?.id;
  return isRequestId(id) ? id : null;
}

/** Whether a (possibly invalid) frame is an `auth` frame, whose failure ends the connection. */
export function isAuthFrame(frame: unknown): boolean {
  return (frame as { type?: unknown } | null)?.type === 'auth';
}

const withId = (id: UtcpRequestId | undefined) => (id === undefined ? {} : { id });

export const errorFrame = (id: UtcpRequestId | null, error: UtcpError): UtcpServerFrame => ({ type: 'error', id, error });

export const authOkFrame = (id: UtcpRequestId | null): UtcpServerFrame => ({ type: 'auth_ok', ...withId(id ?? undefined) });

export const discoveryResponseFrame = (id: UtcpRequestId | undefined, manual: UtcpManual): UtcpServerFrame => ({
  type: 'discovery_response',
  ...withId(id),
  ...manual,
});

function errorOf({ code, message, details }: Pick<ToolFailure, 'code' | 'message' | 'details'>): UtcpError {
  return details === undefined ? { code, message } : { code, message, details };
}

/** A value as a frame carries it: `undefined` has no JSON form, so it travels as `null`. */
const asJson = (value: unknown): unknown => (value === undefined ? null : value);

/**
 * The frames answering one 0.1 `call`, all with its `id`: a `result` with `partial: true` for
 * each partial result of a streaming tool, then the final `result` (with `partial: false` when
 * pieces came before it) or an `error`.
 */
export function callFrames(id: UtcpRequestId): OperatorFunction<ToolStreamEvent, UtcpServerFrame> {
  return (events) =>
    defer(() => {
      let streamed = false;
      return events.pipe(
        map((event): UtcpServerFrame => {
          if (event.type === 'partial') {
            streamed = true;
            return { type: 'result', id, result: asJson(event.value), partial: true };
          }
          const { outcome } = event;
          if (!outcome.ok) return errorFrame(id, errorOf(outcome));
          return { type: 'result', id, result: resultOf(outcome), ...(streamed ? { partial: false } : {}) };
        }),
      );
    });
}

/** A `tool_error` frame, as text: what a failure is on `/utcp/<tool>`, streaming or not. */
export function toolErrorFrame(error: UtcpError): string {
  const { message, ...rest } = error;
  return JSON.stringify({ type: 'tool_error', error: message, ...rest } satisfies UtcpToolFrame);
}

export const TOOL_AUTH_OK_FRAME = JSON.stringify({ type: 'auth_ok' } satisfies UtcpToolFrame);

const STREAM_END_FRAME = JSON.stringify({ type: 'stream_end' } satisfies UtcpToolFrame);
const toolResponseFrame = (result: unknown) => JSON.stringify({ type: 'tool_response', result } satisfies UtcpToolFrame);

/**
 * A call on `/utcp/<tool>` that does not stream: one frame, the final result itself as JSON
 * (what the 1.x plugin's `call_tool` returns to its caller), or a `tool_error` frame.
 * Partial results are not sent; the final one stands for them.
 */
export function plainToolFrames(): OperatorFunction<ToolStreamEvent, string> {
  return concatMap((event) => {
    if (event.type === 'partial') return [];
    const { outcome } = event;
    return [outcome.ok ? JSON.stringify(resultOf(outcome)) : toolErrorFrame(errorOf(outcome))];
  });
}

/**
 * A call on `/utcp/<tool>?stream=true`: a `tool_response` for each partial result and for the
 * final one, then `stream_end`, which the 1.x plugin's `call_tool_streaming` reads as the end.
 * A failure is a `tool_error`, which ends the plugin's stream itself; no `stream_end` follows
 * it, since the plugin would read that as the end of its next call.
 */
export function streamingToolFrames(): OperatorFunction<ToolStreamEvent, string> {
  return concatMap((event) => {
    if (event.type === 'partial') return [toolResponseFrame(asJson(event.value))];
    const { outcome } = event;
    return outcome.ok ? [toolResponseFrame(resultOf(outcome)), STREAM_END_FRAME] : [toolErrorFrame(errorOf(outcome))];
  });
}
