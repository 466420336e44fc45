import { Logger } from '@nestjs/common';
import { describeException } from '../core/errors/describe-exception';
import { errorFrame, frameId, LiteMcpServerFrame, resultFrame } from './litemcp.frames';
import { failedCallResult } from './litemcp.mapper';

const logger = new Logger('LiteMCP');

/**
 * Any failure of a LiteMCP request, as LiteMCP: a `call` whose id could be read is answered with
 * its `result` marked `error: true` (the client is waiting for that id), anything else with an
 * `error` frame echoing the id it could read. The connection stays open.
 */
export function liteMcpFailure(error: unknown, frame: unknown): LiteMcpServerFrame {
  const { code, message } = describeException(error, logger);
  const id = frameId(frame);
  const isCall = (frame as { type?: unknown } | null)?.type === 'call';
  return isCall && id !== null ? resultFrame(id, failedCallResult({}, message)) : errorFrame(id, code, message);
}
