import type { ToolOutcome } from '../core/tools/tool-definition';
import { resultEcho, resultForModel } from './tool-result-text';

const ok = (value: unknown, content?: { type: string; text?: string }[]): ToolOutcome => ({ ok: true, value, content, durationMs: 1 });

describe('a tool result for the model', () => {
  it("is the content's text, else the value, whole while within the bound", () => {
    expect(resultForModel(ok('ignored', [{ type: 'text', text: 'The sum is 5.' }]), 100)).toBe('The sum is 5.');
    expect(resultForModel(ok({ celsius: 21 }), 100)).toBe('{"celsius":21}');
    expect(resultForModel(ok(undefined), 100)).toBe('null');
    expect(resultForModel({ ok: false, code: 'TOOL_TIMEOUT', message: 'Too slow', durationMs: 1 }, 100)).toBe(
      '{"error":{"code":"TOOL_EXECUTION_FAILED","message":"Too slow"}}',
    );
  });

  it('is cut past the bound, saying so and how long it was', () => {
    const text = resultForModel(ok('a'.repeat(5_000_000)), 1000);
    expect(text).toBe(`${'a'.repeat(1000)}\n[Cut by the gateway: this result is 5000000 characters long; only its first 1000 are shown.]`);
  });

  it('never splits a character made of two code units', () => {
    expect(resultForModel(ok(`${'a'.repeat(9)}😀😀`), 10).startsWith(`${'a'.repeat(9)}\n[Cut`)).toBe(true);
  });
});

describe('a tool result echoed in tool_call', () => {
  it('is the result itself while its text is within the bound', () => {
    expect(resultEcho(ok({ celsius: 21 }), 100)).toEqual({ result: { celsius: 21 } });
    expect(resultEcho(ok('The sum is 5.'), 100)).toEqual({ result: 'The sum is 5.' });
    expect(resultEcho({ ok: false, code: 'TOOL_NOT_FOUND', message: 'Unknown tool "x"', durationMs: 1 }, 100)).toEqual({
      result: { error: { code: 'TOOL_NOT_FOUND', message: 'Unknown tool "x"' } },
    });
  });

  it('is a preview of its text with the whole length past the bound', () => {
    expect(resultEcho(ok('b'.repeat(5_000_000)), 10)).toEqual({ result: 'bbbbbbbbbb', result_truncated: true, result_chars: 5_000_000 });
    expect(resultEcho(ok({ rows: [1, 2, 3, 4, 5] }), 8)).toEqual({ result: '{"rows":', result_truncated: true, result_chars: 20 });
  });
});
