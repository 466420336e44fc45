import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import { map, Observable } from 'rxjs';
import type { WebSocket } from 'ws';
import { cleanForSpeech } from '../core/speech/clean-for-speech';
import { LlmConnectionRegistry } from './llm-connection.registry';
import type { LlmServerFrame } from './llm-gateway.frames';

/**
 * Cleans every outgoing `llm_response` for speech (spec 5.2) on its way to the socket, unless
 * the connection turned cleaning off with `configure {clean_response: false}`.
 */
@Injectable()
export class SpeechCleaningInterceptor implements NestInterceptor {
  constructor(private readonly connections: LlmConnectionRegistry) {}

  intercept(context: ExecutionContext, next: CallHandler<LlmServerFrame>): Observable<LlmServerFrame> {
    const connection = this.connections.of(context.switchToWs().getClient<WebSocket>());
    return next.handle().pipe(
      map((frame) =>
        frame?.type === 'llm_response' && connection?.cleanResponses !== false
          ? { ...frame, content: cleanForSpeech(frame.content) }
          : frame,
      ),
    );
  }
}
