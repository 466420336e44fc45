import type { ToolOutcome } from '../core/tools/tool-definition';
import { callAnswerFrame, isRequestId, partialResultFrame, requestIdOf, toolAnswerFrames, toolResponseFrame } from './utcp.frames';

const ok = (value: unknown): ToolOutcome => ({ ok: true, value, durationMs: 1 });
const failed = (outcome: Partial<ToolOutcome> = {}): ToolOutcome =>
  ({ ok: false, code: 'TOOL_EXECUTION_FAILED', message: 'Sensor unplugged', durationMs: 1, ...outcome }) as ToolOutcome;

describe('UTCP frames', () => {
  describe('for a 0.1 call on /utcp', () => {
    it('answers a plain result with one result frame', () => {
      expect(callAnswerFrame('c1', ok(5), false)).toEqual({ type: 'result', id: 'c1', result: 5 });
    });

    it('marks every streamed piece partial, and the final result not', () => {
      expect([partialResultFrame(7, 2), partialResultFrame(7, undefined), callAnswerFrame(7, ok({ done: true }), true)]).toEqual([
        { type: 'result', id: 7, result: 2, partial: true },
        { type: 'result', id: 7, result: null, partial: true },
        { type: 'result', id: 7, result: { done: true }, partial: false },
      ]);
    });

    it('ends a failed call with an error frame carrying its code, message and details', () => {
      expect(callAnswerFrame('c1', failed({ details: { retry: true } } as Partial<ToolOutcome>), true)).toEqual({
        type: 'error',
        id: 'c1',
        error: { code: 'TOOL_EXECUTION_FAILED', message: 'Sensor unplugged', details: { retry: true } },
      });
    });
  });

  describe('for a call on /utcp/<tool>', () => {
    const parsed = (frames: string[]) => frames.map((text) => JSON.parse(text));

    it('answers with the final result alone as JSON, or a tool_error', () => {
      expect(toolAnswerFrames(ok({ done: true }), false)).toEqual(['{"done":true}']);
      expect(toolAnswerFrames(ok(undefined), false)).toEqual(['null']);
      expect(parsed(toolAnswerFrames(failed(), false))).toEqual([{ type: 'tool_error', error: 'Sensor unplugged', code: 'TOOL_EXECUTION_FAILED' }]);
    });

    it('streams a tool_response per result, then stream_end; a failure ends with tool_error alone', () => {
      expect(parsed([toolResponseFrame(2), toolResponseFrame(1), ...toolAnswerFrames(ok(0), true)])).toEqual([
        { type: 'tool_response', result: 2 },
        { type: 'tool_response', result: 1 },
        { type: 'tool_response', result: 0 },
        { type: 'stream_end' },
      ]);
      expect(parsed([toolResponseFrame(2), ...toolAnswerFrames(failed({ code: 'TOOL_TIMEOUT', message: 'Too slow' }), true)])).toEqual([
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
