import type { JsonSchema } from '../core/tools/json-schema';

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

/** One tool of a UTCP 1.x manual. */
export interface UtcpManualTool {
  name: string;
  description: string;
  inputs: JsonSchema;
  outputs: JsonSchema;
  tags: string[];
  tool_call_template: UtcpWebSocketCallTemplate;
}

/** A UTCP 1.x manual: what `GET /utcp` and the discovery frames return. */
export interface UtcpManual {
  utcp_version: string;
  manual_version: string;
  tools: UtcpManualTool[];
}

/** A UTCP 0.1 request id, chosen by the client and echoed in every answer to that request. */
export type UtcpRequestId = string | number;

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
