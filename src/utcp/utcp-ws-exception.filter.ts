import { ArgumentsHost, Catch, ExceptionFilter, Logger } from '@nestjs/common';
import { WebSocket } from 'ws';
import { describeException } from '../core/errors/describe-exception';
import { connectionOf } from '../core/ws/gateway-connection';
import { errorFrame, isAuthFrame, requestIdOf, toolErrorFrame } from './utcp-frames';

/** RFC 6455 "policy violation": the close code after a refused `auth` frame. */
const CLOSE_POLICY_VIOLATION = 1008;

const logger = new Logger('UTCP');

/**
 * Any failure on a UTCP socket, in its path's vocabulary: an `error` frame echoing the request's
 * id on `/utcp`, a `tool_error` frame on `/utcp/<tool>`. The connection stays open, except after
 * a failed `auth` frame: a client whose token was refused has nothing left to do on it, so the
 * error is followed by a close (1008).
 */
@Catch()
export class UtcpWsExceptionFilter implements ExceptionFilter {
  catch(exception: unknown, host: ArgumentsHost): void {
    const ws = host.switchToWs();
    const socket = ws.getClient<WebSocket>();
    const frame: unknown = ws.getData();
    const { code, message } = describeException(exception, logger);
    if (socket.readyState !== WebSocket.OPEN) return;
    const onToolPath = connectionOf(socket).params.tool !== undefined;
    socket.send(onToolPath ? toolErrorFrame({ code, message }) : JSON.stringify(errorFrame(requestIdOf(frame), { code, message })));
    if (isAuthFrame(frame)) socket.close(CLOSE_POLICY_VIOLATION, 'Authentication failed');
  }
}
