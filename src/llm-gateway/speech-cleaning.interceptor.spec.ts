import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host';
import { lastValueFrom, of, toArray } from 'rxjs';
import type { LlmConnection } from './llm-connection';
import { LlmConnectionState } from './llm-connection';
import { llmResponseFrame, partialResponseFrame, statusFrame } from './llm-gateway.frames';
import type { LlmServerFrame } from './protocol';
import { SpeechCleaningInterceptor } from './speech-cleaning.interceptor';

describe('SpeechCleaningInterceptor', () => {
  const interceptor = new SpeechCleaningInterceptor();

  /** The frames a turn's handler emitted, as a client receives them after the interceptor. */
  function received(frames: LlmServerFrame[], cleanResponses = true): Promise<LlmServerFrame[]> {
    const state = new LlmConnectionState(true);
    state.cleanResponses = cleanResponses;
    const connection = { state } as LlmConnection;
    const context = new ExecutionContextHost([connection, { type: 'text_input', text: 'hi' }]);
    context.setType('ws');
    return lastValueFrom(interceptor.intercept(context, { handle: () => of(...frames) }).pipe(toArray()));
  }

  const contents = (frames: LlmServerFrame[]) => frames.map((frame) => (frame.type === 'llm_response' ? [frame.content, frame.seq ?? 'final'] : frame.type));

  it('cleans each streamed sentence, drops one left with nothing to say, renumbers, and joins what was said for the final answer', async () => {
    const frames = await received([
      statusFrame('processing'),
      partialResponseFrame('**Sunny** today.', 0),
      partialResponseFrame(' 🎉🎉', 1),
      partialResponseFrame(' High of 25°C.', 2),
      llmResponseFrame('**Sunny** today. 🎉🎉 High of 25°C.', []),
      statusFrame('idle'),
    ]);
    expect(contents(frames)).toEqual([
      'status',
      ['Sunny today.', 0],
      [' High of 25 degrees Celsius.', 1],
      ['Sunny today. High of 25 degrees Celsius.', 'final'],
      'status',
    ]);
  });

  it('cleans a final answer that was not streamed as a whole', async () => {
    const frames = await received([llmResponseFrame('# Weather\n- **Sunny**', [])]);
    expect(contents(frames)).toEqual([['Weather\nSunny', 'final']]);
  });

  it('leaves the text as the model wrote it when the connection turned cleaning off', async () => {
    const frames = await received([partialResponseFrame('**Sunny** 🌞.', 0), llmResponseFrame('**Sunny** 🌞.', [])], false);
    expect(contents(frames)).toEqual([
      ['**Sunny** 🌞.', 0],
      ['**Sunny** 🌞.', 'final'],
    ]);
  });
});
