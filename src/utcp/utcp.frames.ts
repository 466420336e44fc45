import type { JsonSchema } from '../core/tools/json-schema';
import type { ToolFailure, ToolOutcome, ToolSuccess } from '../core/tools/tool-definition';

/** The UTCP version whose manual format the gateway writes (1.x: `inputs`, `outputs`, call templates). */
export const UTCP_VERSION = '1.0.1';

/** Version of the manual's layout as this gateway writes it; changes when the projection does. */
export const UTCP_MANUAL_VERSION = '1.0.0';

/**
 * The UTCP variable a 1.x client sets to its gateway token when auth is on; the manual's call
 * templates refer to it rather than carry a secret. The Python client looks it up namespaced by
 * the manual's name (`<manual>_GATEWAY_TOKEN`).
 */
export const TOKEN_VARIABLE = 'GATEWAY_TOKEN';

/** UTCP's `api_key` auth, placed in a handshake header. */
export interface UtcpApiKeyAuth {
  auth_type: 'api_key';
  api_key: string;
  var_name: string;
  location: 'header';
}

/** A UTCP 1.x websocket call template, as the `utcp-websocket` plugin reads it. */
export interface UtcpWebSocketCallTemplate {
  call_template_type: 'websocket';
  /** Letters, digits and `_` only (UTCP's rule for call template names). */
  name: string;
  url: string;
  /** Every frame the gateway sends is JSON, so the plugin hands callers parsed values. */
  response_format: 'json';
  /** Seconds the plugin waits: the tool's time limit and one more, so the gateway's own timeout answers first. */
  timeout: number;
  auth?: UtcpApiKeyAuth;
}

/**
 * The input every HTTP call template names as its `body_field`: `@utcp/http` sends that one
 * argument as the request body and every other argument as a query parameter, so the manual
 * wraps each tool's arguments in it (as UTCP's own OpenAPI converter does for a JSON body).
 */
export const HTTP_BODY_FIELD = 'body';

/** A UTCP 1.x `http` call template (`@utcp/http`'s `HttpCallTemplateSchema`): one POST per call, JSON in and out. */
export interface UtcpHttpCallTemplate {
  call_template_type: 'http';
  name: string;
  url: string;
  http_method: 'POST';
  content_type: 'application/json';
  body_field: typeof HTTP_BODY_FIELD;
  auth?: UtcpApiKeyAuth;
}

/**
 * A UTCP 1.x `sse` call template (`SseCallTemplateSchema`): one POST whose answer is an event
 * stream. `reconnect` is off, since reconnecting would run the tool again; the JSON content
 * type is a header because the Python plugin sends the body as JSON only when told so.
 */
export interface UtcpSseCallTemplate {
  call_template_type: 'sse';
  name: string;
  url: string;
  body_field: typeof HTTP_BODY_FIELD;
  headers: { 'Content-Type': 'application/json' };
  reconnect: false;
  auth?: UtcpApiKeyAuth;
}

export type UtcpCallTemplate = UtcpWebSocketCallTemplate | UtcpHttpCallTemplate | UtcpSseCallTemplate;

/** One tool of a UTCP 1.x manual. */
export interface UtcpManualTool {
  name: string;
  description: string;
  inputs: JsonSchema;
  outputs: JsonSchema;
  tags: string[];
  tool_call_template: UtcpCallTemplate;
}

/** A UTCP 1.x manual: what `GET /utcp` and the discovery frames return. */
export interface UtcpManual {
  utcp_version: string;
  manual_version: string;
  tools: UtcpManualTool[];
}

/** A UTCP 0.1 request id, chosen by the client and echoed in every answer to that request. */
export type UtcpRequestId = string | number;

/** Longest request id the gateway echoes; ids are correlation keys, not payloads. */
export const MAX_REQUEST_ID_LENGTH = 256;

/** The error a frame carries: a stable gateway code and a message safe to show. */
export interface UtcpError {
  code: string;
  message: string;
  /** What a tool attached to its failure (`ToolError` details), passed on as-is. */
  details?: unknown;
}

/**
 * What the gateway sends on `/utcp`: the 0.1 `result` frames (with `partial` on streamed
 * calls), the bare manual for `{"type":"utcp"}`, and this gateway's additions: `error`,
 * `discovery_response` for `{"type":"discover"}`, and `auth_ok`.
 */
export type UtcpServerFrame =
  | { type: 'result'; id: UtcpRequestId; result: unknown; partial?: boolean }
  | { type: 'error'; id: UtcpRequestId | null; error: UtcpError }
  | ({ type: 'discovery_response'; id?: UtcpRequestId } & UtcpManual)
  | { type: 'auth_ok'; id?: UtcpRequestId }
  | UtcpManual;

/**
 * What the gateway sends on `/utcp/<tool>` besides plain results: the frames the 1.x plugin's
 * `call_tool_streaming` reads, and the acknowledgement of an `auth` frame.
 */
export type UtcpToolFrame =
  | { type: 'tool_response'; result: unknown }
  | ({ type: 'tool_error'; error: string } & Omit<UtcpError, 'message'>)
  | { type: 'stream_end' }
  | { type: 'auth_ok' };

/** Whether `value` can be a request id: a non-empty string (up to 256 characters) or a finite number. */
export function isRequestId(value: unknown): value is UtcpRequestId {
  return (typeof value === 'string' && value.length > 0 && value.length <= MAX_REQUEST_ID_LENGTH) || (typeof value === 'number' && Number.isFinite(value));
}

/** The frame's `id` when it has a usable one, for echoing in an answer; `null` otherwise. */
export function requestIdOf(frame: unknown): UtcpRequestId | null {
  const id = (frame as { id?: unknown } | null)?.id;
  return isRequestId(id) ? id : null;
}

const withId = (id: UtcpRequestId | null | undefined) => (id === undefined || id === null ? {} : { id });

export const errorFrame = (id: UtcpRequestId | null, error: UtcpError): UtcpServerFrame => ({ type: 'error', id, error });

export const authOkFrame = (id: UtcpRequestId | null): UtcpServerFrame => ({ type: 'auth_ok', ...withId(id) });

export const discoveryResponseFrame = (id: UtcpRequestId | undefined, manual: UtcpManual): UtcpServerFrame => ({
  type: 'discovery_response',
  ...withId(id),
  ...manual,
});

export function errorOf({ code, message, details }: Pick<ToolFailure, 'code' | 'message' | 'details'>): UtcpError {
  return details === undefined ? { code, message } : { code, message, details };
}

/**
 * The JSON value a UTCP answer carries for a successful call: the tool's value, else the content
 * blocks it produced itself (upstream MCP tools), else `null`.
 */
export function resultOf(outcome: Pick<ToolSuccess, 'value' | 'content'>): unknown {
  return outcome.value !== undefined ? outcome.value : (outcome.content ?? null);
}

/** A value as a frame carries it: `undefined` has no JSON form, so it travels as `null`. */
export const asJson = (value: unknown): unknown => (value === undefined ? null : value);

/** A 0.1 `call`'s partial result, from a streaming tool. */
export const partialResultFrame = (id: UtcpRequestId, value: unknown): UtcpServerFrame => ({
  type: 'result',
  id,
  result: asJson(value),
  partial: true,
});

/** A 0.1 `call`'s last frame: its `result` (`partial: false` when pieces came before it), or an `error`. */
export function callAnswerFrame(id: UtcpRequestId, outcome: ToolOutcome, streamed: boolean): UtcpServerFrame {
  if (!outcome.ok) return errorFrame(id, errorOf(outcome));
  return { type: 'result', id, result: resultOf(outcome), ...(streamed ? { partial: false } : {}) };
}

/** A `tool_error`: what a failure is on `/utcp/<tool>`, over WebSocket and HTTP alike. */
export function toolErrorBody(error: UtcpError): UtcpToolFrame {
  const { message, ...rest } = error;
  return { type: 'tool_error', error: message, ...rest };
}

/** A `tool_error` frame, as text: what a failure is on `/utcp/<tool>`, streaming or not. */
export const toolErrorFrame = (error: UtcpError): string => JSON.stringify(toolErrorBody(error));

export const TOOL_AUTH_OK_FRAME = JSON.stringify({ type: 'auth_ok' } satisfies UtcpToolFrame);

export const STREAM_END_FRAME = JSON.stringify({ type: 'stream_end' } satisfies UtcpToolFrame);

/** One result on `/utcp/<tool>?stream=true`, partial or final. */
export const toolResponseFrame = (result: unknown) => JSON.stringify({ type: 'tool_response', result: asJson(result) } satisfies UtcpToolFrame);

/**
 * The last frames of a call on `/utcp/<tool>`. Without streaming: the final result itself as
 * JSON (what the 1.x plugin's `call_tool` returns to its caller; partial results are not sent).
 * With streaming (`?stream=true`): a `tool_response` for the final result, then `stream_end`,
 * which the plugin's `call_tool_streaming` reads as the end. A failure is a `tool_error`, which
 * ends the plugin's stream itself; no `stream_end` follows it, since the plugin would read that
 * as the end of its next call.
 */
export function toolAnswerFrames(outcome: ToolOutcome, streaming: boolean): string[] {
  if (!outcome.ok) return [toolErrorFrame(errorOf(outcome))];
  return streaming ? [toolResponseFrame(resultOf(outcome)), STREAM_END_FRAME] : [JSON.stringify(resultOf(outcome))];
}
