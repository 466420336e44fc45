import { from, lastValueFrom, OperatorFunction, toArray } from 'rxjs';
import type { ToolOutcome, ToolStreamEvent } from '../core/tools/tool-definition';
import { callFrames, isRequestId, plainToolFrames, requestIdOf, streamingToolFrames } from './utcp-frames';

const ok = (value: unknown): ToolStreamEvent => ({ type: 'outcome', outcome: { ok: true, value, durationMs: 1 } });
const failed = (outcome: Partial<ToolOutcome> = {}): ToolStreamEvent => ({
  type: 'outcome',
  outcome: { ok: false, code: 'TOOL_EXECUTION_FAILED', message: 'Sensor unplugged', durationMs: 1, ...outcome } as ToolOutcome,
});
const partial = (value: unknown): ToolStreamEvent => ({ type: 'partial', value });

const framesOf = <T>(events: ToolStreamEvent[], frames: OperatorFunction<ToolStreamEvent, T>) =>
  lastValueFrom(from(events).pipe(frames, toArray()));

describe('UTCP frames', () => {
  describe('for a 0.1 call on /utcp', () => {
    it('answers a plain result with one result frame', async () => {
      expect(await framesOf([ok(5)], callFrames('c1'))).toEqual([{ type: 'result', id: 'c1', result: 5 }]);
    });

    it('marks every streamed piece partial, and the final result not', async () => {
      expect(await framesOf([partial(2), partial(undefined), ok({ done: true })], callFrames(7))).toEqual([
        { type: 'result', id: 7, result: 2, partial: true },
        { type: 'result', id: 7, result: null, partial: true },
        { type: 'result', id: 7, result: { done: true }, partial: false },
      ]);
    });

    it('ends a failed call with an error frame carrying its code, message and details', async () => {
      expect(await framesOf([partial(1), failed({ details: { retry: true } } as Partial<ToolOutcome>)], callFrames('c1'))).toEqual([
        { type: 'result', id: 'c1', result: 1, partial: true },
        { type: 'error', id: 'c1', error: { code: 'TOOL_EXECUTION_FAILED', message: 'Sensor unplugged', details: { retry: true } } },
      ]);
    });
  });

  describe('for a call on /utcp/<tool>', () => {
    it('answers with the final result alone as JSON, or a tool_error', async () => {
      expect(await framesOf([partial(1), ok({ done: true })], plainToolFrames())).toEqual(['{"done":true}']);
      expect(await framesOf([ok(undefined)], plainToolFrames())).toEqual(['null']);
      expect((await framesOf([failed()], plainToolFrames())).map((text) => JSON.parse(text))).toEqual([
        { type: 'tool_error', error: 'Sensor unplugged', code: 'TOOL_EXECUTION_FAILED' },
      ]);
    });

    it('streams a tool_response per result, then stream_end; a failure ends with tool_error alone', async () => {
      expect((await framesOf([partial(2), partial(1), ok(0)], streamingToolFrames())).map((text) => JSON.parse(text))).toEqual([
        { type: 'tool_response', result: 2 },
        { type: 'tool_response', result: 1 },
        { type: 'tool_response', result: 0 },
        { type: 'stream_end' },
      ]);
      expect((await framesOf([partial(2), failed({ code: 'TOOL_TIMEOUT', message: 'Too slow' })], streamingToolFrames())).map((text) => JSON.parse(text))).toEqual([
        { type: 'tool_response', result: 2 },
        { type: 'tool_error', error: 'Too slow', code: 'TOOL_TIMEOUT' },
      ]);
    });
  });

  it('echoes ids that are non-empty strings or numbers, and no others', () => {
    expect([requestIdOf({ id: 'a' }), requestIdOf({ id: 0 }), requestIdOf({ id: '' }), requestIdOf({ id: {} }), requestIdOf(null)]).toEqual([
      'a',
      0,
      null,
      null,
      null,
    ]);
    expect(isRequestId('x'.repeat(257))).toBe(false);
    expect(isRequestId(Number.NaN)).toBe(false);
  });
});
