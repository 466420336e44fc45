import { httpStatusOf } from './describe-exception';
import { GATEWAY_ERROR_CODES } from './error-codes';
import type { GatewayErrorCode } from './gateway-error';

/** What the HTTP status of a failed tool call depends on: the failure's code, the details its tool gave, and whether it was a fault. */
export interface FailedToolCall {
  code: GatewayErrorCode;
  details?: unknown;
  internal?: true;
}

/** The status of a failure its tool explained and gave no code of ours for: the request was understood, the tool could not carry it out. */
export const TOOL_REFUSED_STATUS = 422;

const KNOWN_CODES = new Set<string>(GATEWAY_ERROR_CODES);

/** The gateway code a tool named in its failure's details (`ToolError(message, {code: 'DEVICE_OFFLINE'})`), if any. */
function codeNamedIn(details: unknown): GatewayErrorCode | undefined {
  const code = (details as { code?: unknown } | null | undefined)?.code;
  return typeof code === 'string' && KNOWN_CODES.has(code) ? (code as GatewayErrorCode) : undefined;
}

/**
 * The HTTP status of a failed tool call. Proxies and monitors read a 5xx as a fault of the
 * server, so only faults and what the server could not reach get one:
 * - a call refused or cut short answers its code's status: `TOOL_NOT_FOUND` 404,
 *   `INVALID_TOOL_PARAMETERS` 400, `TOOL_UNAVAILABLE` 503, `TOOL_TIMEOUT` 504;
 * - a tool that failed naming a code of ours in its details answers that code's status
 *   (`DEVICE_OFFLINE` 404, `DEVICE_BUSY` 429, `INVALID_MESSAGE` 400...);
 * - a tool that failed for a reason it explained (a `ToolError`: "Division by zero") answers 422;
 * - a handler that threw anything else (a bug, an unexpected exception) answers 500.
 */
export function httpStatusOfToolFailure(failure: FailedToolCall): number {
  if (failure.code !== 'TOOL_EXECUTION_FAILED') return httpStatusOf(failure.code);
  if (failure.internal) return 500;
  const named = codeNamedIn(failure.details);
  return named !== undefined && named !== 'TOOL_EXECUTION_FAILED' ? httpStatusOf(named) : TOOL_REFUSED_STATUS;
}
