import { ArgumentsHost, Catch, ExceptionFilter, Logger } from '@nestjs/common';
import { WebSocket } from 'ws';
import { DuplicateRequestId } from './duplicate-id.guard';
import { failureFrame } from './litemcp-frame';

const logger = new Logger('LiteMCP');

/**
 * Any failure on a LiteMCP socket, as LiteMCP: a `call` is answered with its `result` marked
 * `error: true`, anything else with an `error` frame echoing the id. The socket stays open.
 * A repeated id is the exception: it is ignored, as the spec says.
 */
@Catch()
export class LiteMcpWsExceptionFilter implements ExceptionFilter {
  catch(exception: unknown, host: ArgumentsHost): void {
    if (exception instanceof DuplicateRequestId) return;
    const ws = host.switchToWs();
    const socket = ws.getClient<WebSocket>();
    const reply = failureFrame(ws.getData(), exception, logger);
    if (socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(reply));
  }
}
