import type { LlmMessage, LlmService } from '../assistant/llm/llm.service';
import type { ToolCaller } from '../core/tools/tool-definition';
import { spokenAnswer, spokenQuestion } from './spoken-question';

/** Says `question` to the user and resolves with the words of their answer. */
export type AskAloud = (question: string, signal: AbortSignal) => Promise<string>;

interface SamplingMessage {
  role: 'user' | 'assistant';
  content: { type: string; text?: string } | { type: string; text?: string }[];
}

/** Sampling messages as chat messages: their text; an image or audio block becomes a short note, which the text model can read. */
function chatMessages(messages: SamplingMessage[]): LlmMessage[] {
  return messages.map(({ role, content }) => {
    const blocks = Array.isArray(content) ? content : [content];
    const text = blocks.map((block) => (block.type === 'text' ? (block.text ?? '') : `[${block.type}]`)).join('\n');
    return role === 'assistant' ? { role: 'assistant', content: text } : { role: 'user', content: text };
  });
}

/**
 * A model's turn as the caller of its tools (see `ToolCaller`), for what an upstream MCP server
 * asks while its tool runs: `sampling/createMessage` is answered by the gateway's own model (its
 * text, within the request's `maxTokens`); `elicitation/create` is said to the user as a question
 * in the turn's answer, and their next `text_input` is the answer ({@link spokenAnswer}). A
 * question that cannot be answered aloud, or a turn that cannot ask (`ask` absent), is refused
 * with the reason.
 */
export function turnCaller(llm: LlmService, ask: AskAloud | undefined, limits: { temperature: number; maxTokens: number }): ToolCaller {
  return {
    request: async (method, params, signal) => {
      if (method === 'sampling/createMessage') {
        const messages = chatMessages((params?.messages ?? []) as SamplingMessage[]);
        const system = typeof params?.systemPrompt === 'string' ? [{ role: 'system' as const, content: params.systemPrompt }] : [];
        const maxTokens = Math.min(Number(params?.maxTokens) || limits.maxTokens, limits.maxTokens);
        const temperature = typeof params?.temperature === 'number' ? params.temperature : limits.temperature;
        const text = await llm.complete({ messages: [...system, ...messages], maxTokens, temperature, signal });
        return { role: 'assistant', content: { type: 'text', text }, model: llm.model, stopReason: 'endTurn' };
      }
      if (method === 'elicitation/create') {
        const question = spokenQuestion(params);
        if (typeof question === 'string') throw new Error(`The question cannot be asked aloud: ${question}`);
        if (!ask) throw new Error('This session cannot ask the user: its answers are not streamed (configure {stream: true})');
        return spokenAnswer(question, await ask(question.message, signal));
      }
      throw new Error(`A voice turn cannot answer "${method}"`);
    },
  };
}
