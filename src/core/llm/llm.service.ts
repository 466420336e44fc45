import { Inject, Injectable, Logger } from '@nestjs/common';
import OpenAI, { APIConnectionError, APIError } from 'openai';
import type { ChatCompletionFunctionTool, ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { GATEWAY_CONFIG, GatewayConfig } from '../../config/gateway-config';
import { GatewayError, GatewayErrorCode } from '../errors/gateway-error';
import { stripThinkBlocks } from '../speech/think-blocks';

export type LlmMessage = ChatCompletionMessageParam;
export type LlmTool = ChatCompletionFunctionTool;

export interface LlmToolCall {
  id: string;
  name: string;
  /** The arguments as the model wrote them: JSON text, possibly malformed. */
  arguments: string;
}

export interface LlmReply {
  /** The answer text, reasoning blocks removed. */
  content: string;
  toolCalls: LlmToolCall[];
}

export interface CompletionRequest {
  messages: LlmMessage[];
  tools: LlmTool[];
  temperature: number;
  maxTokens: number;
  signal?: AbortSignal;
}

/** One tool call's result, as the model will read it. */
export interface ToolResultMessage {
  callId: string;
  content: string;
}

export interface ConversationRequest extends Omit<CompletionRequest, 'messages'> {
  /** The system prompt, asked for before every model call: a tool may change the settings mid-turn. */
  systemPrompt: () => Promise<string>;
  /** History and the user's message, without the system message. */
  messages: LlmMessage[];
  /** Runs one round of the model's tool calls (concurrently) and returns their results. */
  runTools: (calls: LlmToolCall[], signal?: AbortSignal) => Promise<ToolResultMessage[]>;
}

export interface ConversationResult {
  answer: string;
  /** Model calls made, tool rounds included. */
  rounds: number;
}

/**
 * The model behind the gateway: any OpenAI-compatible server (vLLM, Ollama, OpenAI...) through
 * the `openai` package. Answers are streamed from the server and assembled by the package's
 * stream helper (which puts tool-call deltas together); the whole stream runs under
 * `LLM_TIMEOUT`. Failures become GatewayErrors: TIMEOUT when the deadline passes, LLM_ERROR for
 * anything else, with a detail that names the kind of failure and never the server's body.
 */
@Injectable()
export class LlmService {
  private readonly logger = new Logger('LLM');
  private readonly client: OpenAI;

  constructor(@Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig) {
    const { llm } = config;
    this.client = new OpenAI({
      baseURL: llm.baseUrl,
      // Local servers need no key, but the package insists on one.
      apiKey: llm.apiKey ?? 'not-needed',
      maxRetries: llm.maxRetries,
      timeout: llm.timeoutMs,
    });
  }

  /** One model call: the reply text and any tool calls. */
  async complete(request: CompletionRequest): Promise<LlmReply> {
    const { timeoutMs } = this.config.llm;
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(), timeoutMs);
    const signal = request.signal ? AbortSignal.any([request.signal, deadline.signal]) : deadline.signal;
    try {
      const stream = this.client.chat.completions.stream(
        {
          model: this.config.llm.model,
          messages: request.messages,
          tools: request.tools.length > 0 ? request.tools : undefined,
          temperature: request.temperature,
          max_tokens: request.maxTokens,
        },
        { signal },
      );
      const completion = await stream.finalChatCompletion();
      const message = completion.choices[0]?.message;
      const toolCalls = (message?.tool_calls ?? []).flatMap((call) =>
        call.type === 'function' ? [{ id: call.id, name: call.function.name, arguments: call.function.arguments ?? '' }] : [],
      );
      return { content: stripThinkBlocks(message?.content ?? ''), toolCalls };
    } catch (error) {
      if (request.signal?.aborted) throw request.signal.reason ?? error;
      if (deadline.signal.aborted) {
        throw new GatewayError(GatewayErrorCode.TIMEOUT, 'Request timeout', `The model did not answer within ${timeoutMs / 1000} s`);
      }
      throw this.describe(error);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * The tool loop: asks the model, runs the tool calls it makes (one round at a time, each
   * round's calls together), feeds the results back, and repeats until the model answers. The
   * last of `LLM_MAX_TOOL_ROUNDS` calls offers no tools, so the model has to answer.
   */
  async converse(request: ConversationRequest): Promise<ConversationResult> {
    const { maxToolRounds } = this.config.llm;
    const transcript = [...request.messages];
    for (let round = 1; ; round += 1) {
      const last = round >= maxToolRounds;
      const reply = await this.complete({
        ...request,
        messages: [{ role: 'system', content: await request.systemPrompt() }, ...transcript],
        tools: last ? [] : request.tools,
      });
      if (reply.toolCalls.length === 0 || last) return { answer: reply.content, rounds: round };
      transcript.push({
        role: 'assistant',
        content: reply.content || null,
        tool_calls: reply.toolCalls.map((call) => ({
          id: call.id,
          type: 'function' as const,
          function: { name: call.name, arguments: call.arguments },
        })),
      });
      const results = await request.runTools(reply.toolCalls, request.signal);
      for (const result of results) transcript.push({ role: 'tool', tool_call_id: result.callId, content: result.content });
    }
  }

  private describe(error: unknown): GatewayError {
    const detail =
      error instanceof APIConnectionError
        ? `The model server at ${this.config.llm.baseUrl} could not be reached`
        : error instanceof APIError && error.status !== undefined
          ? `The model server answered HTTP ${error.status}`
          : `The model's answer could not be read: ${(error as Error)?.message ?? error}`;
    this.logger.warn(`LLM request failed: ${(error as Error)?.stack ?? error}`);
    return new GatewayError(GatewayErrorCode.LLM_ERROR, 'Failed to process request', detail);
  }
}
