import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import { Observable } from 'rxjs';
import { cleanForSpeech } from '../assistant/speech/clean-for-speech';
import type { LlmConnection } from './llm-connection';
import type { LanguageCode, LlmServerFrame } from './protocol';

const SAYS_SOMETHING = /[\p{L}\p{N}]/u;
const LEAD = /^\s*/;

/**
 * Cleaning for speech (spec 5.2, "响应内容清理"), as a Nest interceptor over a turn's stream of
 * answers: every `llm_response` loses Markdown, emoji and decorative symbols, and says units and
 * symbols in words, in the turn's language, unless the connection turned cleaning off
 * (`configure {clean_response: false}`). A streamed sentence left with nothing to say is not
 * sent, and the partials are numbered as they go out; a streaming turn's final answer is the
 * partials it let through, joined, so a client that ignores partials still gets what was said.
 * Reasoning blocks are never part of the stream (the turn removes them, cleaning or not).
 */
@Injectable()
export class SpeechCleaningInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler<LlmServerFrame>): Observable<LlmServerFrame> {
    const connection = context.switchToWs().getClient<LlmConnection>();
    return cleanedTurn(next.handle(), connection);
  }
}

/** One turn's frames, cleaned: per subscription, since it keeps what the turn has said so far. */
export function cleanedTurn(frames: Observable<LlmServerFrame>, connection: LlmConnection): Observable<LlmServerFrame> {
  return new Observable((out) => {
    let said = '';
    let seq = 0;
    let streamed = false;
    const clean = (text: string, frame: LlmServerFrame): string => cleanForSpeech(text, languageOf(connection, frame));
    return frames.subscribe({
      next: (frame) => {
        if (frame.type !== 'llm_response') return out.next(frame);
        const cleaning = connection.state.cleanResponses;
        if (frame.is_final) return out.next({ ...frame, content: streamed ? said : cleaning ? clean(frame.content, frame) : frame.content });
        streamed = true;
        const text = cleaning ? clean(frame.content, frame) : frame.content.trim();
        if (!SAYS_SOMETHING.test(text)) return;
        const content = (said === '' ? '' : (LEAD.exec(frame.content)?.[0] ?? '')) + text;
        said += content;
        out.next({ ...frame, content, seq: seq++ });
      },
      error: (error: unknown) => out.error(error),
      complete: () => out.complete(),
    });
  });
}

/** The language of the turn a frame belongs to (its session's, or the one the user wrote in). */
function languageOf(connection: LlmConnection, frame: LlmServerFrame): LanguageCode | undefined {
  const turnId = (frame as { turn_id?: string }).turn_id;
  return turnId === undefined ? undefined : connection.state.turns.get(turnId)?.language;
}
