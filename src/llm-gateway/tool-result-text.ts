import { textOfContent } from '../core/tools/tool-content';
import type { ToolOutcome } from '../core/tools/tool-definition';
import { llmCodeOfToolFailure } from './llm-gateway.errors';

/** What a `tool_call` frame says of the result: the result itself, or a preview of it and its length. */
export interface ResultEcho {
  result: unknown;
  result_truncated?: true;
  result_chars?: number;
}

const isHighSurrogate = (code: number): boolean => code >= 0xd800 && code <= 0xdbff;

/** The first `maxChars` of `text`, one fewer rather than half a surrogate pair. */
function cut(text: string, maxChars: number): string {
  const end = maxChars > 0 && isHighSurrogate(text.charCodeAt(maxChars - 1)) ? maxChars - 1 : maxChars;
  return text.slice(0, end);
}

/** A failure as the model and the device read it. */
const failureValue = (outcome: Extract<ToolOutcome, { ok: false }>) => ({ error: { code: llmCodeOfToolFailure(outcome.code), message: outcome.message } });

/**
 * How a tool result reads to the model: the text of its content blocks when it made some, else
 * its value. Past `maxChars` it is cut, and says so, with its length, so the model neither
 * mistakes a part for the whole nor costs a request the size of whatever the tool returned.
 */
export function resultForModel(outcome: ToolOutcome, maxChars: number): string {
  let text: string;
  if (outcome.ok && outcome.content) text = textOfContent(outcome.content);
  else if (outcome.ok) text = typeof outcome.value === 'string' ? outcome.value : JSON.stringify(outcome.value ?? null);
  else text = JSON.stringify(failureValue(outcome));
  if (text.length <= maxChars) return text;
  return `${cut(text, maxChars)}\n[Cut by the gateway: this result is ${text.length} characters long; only its first ${maxChars} are shown.]`;
}

/**
 * What a `tool_call` frame echoes to the device: the result (a failure's `{"error"}`) when its
 * text is at most `maxChars`, else the first `maxChars` of that text with `result_truncated`
 * and the whole length, so a device is told what ran without being sent all it returned.
 */
export function resultEcho(outcome: ToolOutcome, maxChars: number): ResultEcho {
  const result = outcome.ok ? outcome.value : failureValue(outcome);
  const text = typeof result === 'string' ? result : (JSON.stringify(result) ?? '');
  if (text.length <= maxChars) return { result };
  return { result: cut(text, maxChars), result_truncated: true, result_chars: text.length };
}
