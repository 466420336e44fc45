import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import { defer, filter, map, Observable } from 'rxjs';
import { cleanForSpeech } from '../assistant/speech/clean-for-speech';
import type { LlmConnection } from './llm-connection';
import type { LanguageCode, LlmResponseFrame, LlmServerFrame } from './protocol';

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
    return next.handle().pipe((frames) => defer(() => cleanedTurn(frames, connection)));
  }
}

/** One turn's frames, cleaned: per subscription, since it keeps what the turn has said so far. */
function cleanedTurn(frames: Observable<LlmServerFrame>, connection: LlmConnection): Observable<LlmServerFrame> {
  let said = '';
  let seq = 0;
  let streamed = false;
  const cleaning = () => connection.state.cleanResponses;
  const clean = (text: string, frame: LlmServerFrame): string => cleanForSpeech(text, languageOf(connection, frame));
  return frames.pipe(
    map((frame) => {
      if (frame.type !== 'llm_response') return frame;
      const response = frame as LlmResponseFrame;
      if (response.is_final) return { ...response, content: streamed ? said : cleaning() ? clean(response.content, frame) : response.content };
      streamed = true;
      const text = cleaning() ? clean(response.content, frame) : response.content.trim();
      if (!SAYS_SOMETHING.test(text)) return undefined;
      const content = (said === '' ? '' : (LEAD.exec(response.content)?.[0] ?? '')) + text;
      said += content;
      return { ...response, content, seq: seq++ };
    }),
    filter((frame): frame is LlmServerFrame => frame !== undefined),
  );
}

/** The language of the turn a frame belongs to (its session's, or the one the user wrote in). */
function languageOf(connection: LlmConnection, frame: LlmServerFrame): LanguageCode | undefined {
  const turnId = (frame as { turn_id?: string }).turn_id;
  return turnId === undefined ? undefined : connection.state.turns.get(turnId)?.language;
}
