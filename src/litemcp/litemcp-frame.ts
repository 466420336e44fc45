import { Logger } from '@nestjs/common';
import { describeException } from '../core/errors/describe-exception';
import { failedCallResult } from './litemcp.mapper';
import { LITEMCP_VERSION, LiteMcpCallResult, LiteMcpServerFrame, LiteMcpTool } from './litemcp.types';

/** The frame's `id` when it has a usable one, for echoing in an answer. */
export function frameId(frame: unknown): number | null {
  const id = (frame as { id?: unknown } | null)?.id;
  return Number.isInteger(id) ? (id as number) : null;
}

/** Whether a (possibly invalid) frame is a `call`, which is answered with a `result` even when it fails. */
export function isCallFrame(frame: unknown): boolean {
  return (frame as { type?: unknown } | null)?.type === 'call';
}

export const infoFrame = (id: number, tool: LiteMcpTool): LiteMcpServerFrame => ({
  version: LITEMCP_VERSION,
  id,
  type: 'info',
  data: tool,
});

export const resultFrame = (id: number, result: LiteMcpCallResult): LiteMcpServerFrame => ({
  version: LITEMCP_VERSION,
  id,
  type: 'result',
  data: result,
});

export const errorFrame = (id: number | null, code: string, message: string): LiteMcpServerFrame => ({
  version: LITEMCP_VERSION,
  id,
  type: 'error',
  data: { code, message },
});

/** Validates LiteMCP DTOs; a failure is an INVALID_MESSAGE naming every bad field. */
export { frameValidationPipe as liteMcpValidationPipe } from '../core/validation/frame-validation.pipe';

/**
 * The answer to a request that failed before it produced its own answer: a `call` gets its
 * `result` marked `error: true` (the client is waiting for that id), anything else an `error`
 * frame echoing the id it could read.
 */
export function failureFrame(frame: unknown, exception: unknown, logger: Logger): LiteMcpServerFrame {
  const { code, message } = describeException(exception, logger);
  const id = frameId(frame);
  return isCallFrame(frame) && id !== null ? resultFrame(id, failedCallResult({}, message)) : errorFrame(id, code, message);
}
