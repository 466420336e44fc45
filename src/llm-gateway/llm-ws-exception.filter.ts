import { ArgumentsHost, Catch, ExceptionFilter, Logger } from '@nestjs/common';
import { WebSocket } from 'ws';
import { errorFrame } from './llm-gateway.frames';
import { describeLlmError } from './llm-gateway.mapper';

const logger = new Logger('LlmGateway');

/** Any failure on an LLM-gateway socket, as the spec's `error` frame (5.4); the socket stays open. */
@Catch()
export class LlmWsExceptionFilter implements ExceptionFilter {
  catch(exception: unknown, host: ArgumentsHost): void {
    const socket = host.switchToWs().getClient<WebSocket>();
    const { code, message, details } = describeLlmError(exception, logger);
    if (socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(errorFrame(code, message, details)));
  }
}
