import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import OpenAI, { APIConnectionError, APIError } from 'openai';
import type {
  ChatCompletionChunk,
  ChatCompletionCreateParamsStreaming,
  ChatCompletionFunctionTool,
  ChatCompletionMessageParam,
} from 'openai/resources/chat/completions';
import { GATEWAY_CONFIG, GatewayConfig } from '../../config/gateway-config';
import { ASSISTANT_OBSERVER, AssistantObserver, ModelRequestOutcome } from '../assistant-observer';
import { GatewayError, GatewayErrorCode } from '../../core/errors/gateway-error';
import { stripHiddenText } from '../speech/hidden-text';
import { endSpan, TracingService } from '../../core/tracing/tracing.service';
import { httpFetch } from './http-fetch';
import { redactUrl, redactUrlCredentials } from '../../core/logging/redact';

export type LlmMessage = ChatCompletionMessageParam;
export type LlmTool = ChatCompletionFunctionTool;

export interface LlmToolCall {
  id: string;
  name: string;
  /** The arguments as the model wrote them: JSON text, possibly malformed. */
  arguments: string;
}

export interface LlmReply {
  /** The answer text, reasoning and leaked tool-call markup removed. */
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

/**
 * The tokens one model call used (prompt and completion): the server's `usage`, which streamed
 * requests ask for (`stream_options.include_usage`); from a server that does not send it, an
 * estimate of a token per 4 characters of what was sent and written, so budgets still count.
 */
export interface ModelUsage {
  tokens: number;
  reported: boolean;
}

/** Characters per token when the server reports no usage: the usual rule of thumb for English text (conservative for Chinese, where a character is about a token or less). */
const CHARS_PER_TOKEN = 4;

/** One tool call's result, as the model will read it. */
export interface ToolResultMessage {
  callId: string;
  content: string;
}

export interface ConversationRequest extends Omit<CompletionRequest, 'messages'> {
  systemPrompt: string;
  /** History and the user's message, without the system message. */
  messages: LlmMessage[];
}

/**
 * The model asked for tools: the conversation waits, at this event, until the caller has run
 * them and answered with {@link continueWith}.
 */
export interface ToolRound {
  type: 'tool-round';
  calls: LlmToolCall[];
  /** The round's results, in any order; and the system prompt from now on, when a tool changed what it says. */
  continueWith(results: ToolResultMessage[], systemPrompt?: string): void;
}

/** What a conversation with the model is made of, in the order it happens. */
export type ConversationEvent =
  /** A piece of a reply's text as the model writes it (raw: reasoning blocks and markup not yet removed). */
  | { type: 'text'; delta: string }
  /** A model call is over (its text is complete), how long it took, and the tokens it used. */
  | { type: 'reply-end'; durationMs: number; usage: ModelUsage }
  | ToolRound
  /** The model's answer, reasoning and leaked tool-call markup removed; the last event. */
  | { type: 'answer'; text: string; rounds: number };

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

  constructor(
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
    @Optional() @Inject(ASSISTANT_OBSERVER) private readonly observer?: AssistantObserver,
    @Optional() private readonly tracing?: TracingService,
  ) {
    const { llm } = config;
    this.client = new OpenAI({
      baseURL: llm.baseUrl,
      // Local servers need no key, but the package insists on one.
      apiKey: llm.apiKey ?? 'not-needed',
      maxRetries: llm.maxRetries,
      timeout: llm.timeoutMs,
      fetch: httpFetch,
      logger: this.packageLogger(),
    });
  }

  /**
   * Where the `openai` package's own lines go: through the gateway's logger (its format, its
   * clipping), not to the console, where it wrote whole chunks of a model's unreadable answer.
   * Its errors are ours to report (see {@link describe}), so they are debug lines here.
   */
  private packageLogger() {
    const line = (message: string, args: unknown[]) => [message, ...args.map((arg) => (typeof arg === 'string' ? arg : String(arg)))].join(' ');
    return {
      error: (message: string, ...args: unknown[]) => this.logger.debug?.(line(message, args)),
      warn: (message: string, ...args: unknown[]) => this.logger.warn(line(message, args)),
      info: (message: string, ...args: unknown[]) => this.logger.debug?.(line(message, args)),
      debug: (message: string, ...args: unknown[]) => this.logger.debug?.(line(message, args)),
    };
  }

  /**
   * The conversation of one turn, as events: each model call streamed (`stream: true`), its text
   * as it comes; the tool calls it makes, one round at a time, each round's results fed back by
   * the caller; until the model answers. The last of `LLM_MAX_TOOL_ROUNDS` calls offers no tools,
   * so the model has to answer. Reasoning (`reasoning_content`, `reasoning`) is never part of the
   * answer; a reply that has reasoning but no answer and no tool call is the model's failure.
   * Stopping early (the caller's signal, or leaving the loop) ends the model request.
   */
  async *converse(request: ConversationRequest): AsyncGenerator<ConversationEvent, void, undefined> {
    const { maxToolRounds } = this.config.llm;
    const transcript = [...request.messages];
    let systemPrompt = request.systemPrompt;
    for (let round = 1; ; round += 1) {
      const last = round >= maxToolRounds;
      const reply = yield* this.reply({ ...request, messages: [{ role: 'system', content: systemPrompt }, ...transcript], tools: last ? [] : request.tools });
      if (reply.toolCalls.length === 0 || last) {
        yield { type: 'answer', text: reply.content, rounds: round };
        return;
      }
      transcript.push({
        role: 'assistant',
        content: reply.content || null,
        tool_calls: reply.toolCalls.map((call) => ({ id: call.id, type: 'function' as const, function: { name: call.name, arguments: call.arguments } })),
      });
      let results: ToolResultMessage[] | undefined;
      yield {
        type: 'tool-round',
        calls: reply.toolCalls,
        continueWith: (answered, changedPrompt) => {
          results = answered;
          systemPrompt = changedPrompt ?? systemPrompt;
        },
      };
      if (!results) throw new Error('A tool round was left without its results');
      for (const result of results) transcript.push({ role: 'tool', tool_call_id: result.callId, content: result.content });
    }
  }

  /** The model the gateway asks (`LLM_MODEL`). */
  get model(): string {
    return this.config.llm.model;
  }

  /**
   * One model call without tools, for a text on its own (an upstream MCP server's sampling
   * request, answered by the gateway's model): the same model, limits, timeout and traces as a
   * turn's calls; its answer without reasoning.
   */
  async complete(request: Omit<CompletionRequest, 'tools'>): Promise<string> {
    const reply = this.reply({ ...request, tools: [] });
    for (let step = await reply.next(); ; step = await reply.next()) {
      if (step.done) return step.value.content;
    }
  }

  /** One model call, traced: its text events, then its `reply-end`; returns the reply. */
  private async *reply(request: CompletionRequest): AsyncGenerator<ConversationEvent, LlmReply, undefined> {
    const span = this.tracing?.startModelCall(request.tools.length);
    try {
      const reply = yield* this.stream(request);
      span?.setAttribute('gateway.llm.tool_calls', reply.toolCalls.length);
      endSpan(span);
      return reply;
    } catch (error) {
      if (error instanceof GatewayError) endSpan(span, error.code, { code: error.code, message: error.details ?? error.message });
      else endSpan(span, 'cancelled');
      throw error;
    }
  }

  /** {@link reply}, untraced: the request under `LLM_TIMEOUT`, the chunks read as they arrive, tool-call deltas put together by index. */
  private async *stream(request: CompletionRequest): AsyncGenerator<ConversationEvent, LlmReply, undefined> {
    const { timeoutMs, model, extraBody } = this.config.llm;
    // One controller per call, aborted by the caller's signal or the deadline (cheaper than AbortSignal.any).
    const abort = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      abort.abort();
    }, timeoutMs);
    const stop = () => abort.abort(request.signal?.reason);
    if (request.signal?.aborted) stop();
    request.signal?.addEventListener('abort', stop, { once: true });
    const { signal } = abort;
    const started = performance.now();
    let reply: ReplyAssembler | undefined;
    let outcome: ModelRequestOutcome = 'error';
    let read = false;
    try {
      const body: ChatCompletionCreateParamsStreaming = {
        // Usage comes in a last chunk without choices; LLM_EXTRA_BODY may replace it for a server that refuses the field.
        stream_options: { include_usage: true },
        ...extraBody,
        model,
        messages: request.messages,
        tools: request.tools.length > 0 ? request.tools : undefined,
        temperature: request.temperature,
        max_tokens: request.maxTokens,
        stream: true,
      };
      const stream = await this.client.chat.completions.create(body, { signal });
      reply = new ReplyAssembler();
      for await (const chunk of stream) {
        const delta = reply.add(chunk);
        if (delta) yield { type: 'text', delta };
      }
      read = true;
      yield { type: 'reply-end', durationMs: performance.now() - started, usage: reply.usage(request) };
      const finished = reply.finish();
      outcome = 'ok';
      return finished;
    } catch (error) {
      if (request.signal?.aborted) {
        outcome = 'cancelled';
        throw request.signal.reason ?? error;
      }
      if (timedOut) {
        outcome = 'timeout';
        throw new GatewayError(GatewayErrorCode.TIMEOUT, 'Request timeout', `The model did not answer within ${timeoutMs / 1000} s`);
      }
      throw error instanceof GatewayError ? error : this.describe(error);
    } finally {
      clearTimeout(timer);
      request.signal?.removeEventListener('abort', stop);
      // A caller that left the conversation before the stream was read ends the model request with it.
      if (!read && !signal.aborted) abort.abort(LEFT_EARLY);
      const firstTokenAt = reply?.firstTokenAt;
      this.observer?.modelRequestEnded(outcome, performance.now() - started, firstTokenAt === undefined ? undefined : firstTokenAt - started);
    }
  }

  /**
   * A failed model call as LLM_ERROR, with a detail that names the kind of failure and nothing
   * the model server wrote (an error event's message, a snippet of its body in a JSON parse
   * error): clients see it. The log line has the server's words; a stack trace only for a fault
   * of ours, not for the model server's.
   */
  private describe(error: unknown): GatewayError {
    const detail =
      error instanceof APIConnectionError
        ? `The model server at ${redactUrl(this.config.llm.baseUrl)} could not be reached`
        : error instanceof APIError && error.status !== undefined
          ? `The model server answered HTTP ${error.status}`
          : error instanceof APIError
            ? 'The model server reported an error in the middle of its answer'
            : error instanceof SyntaxError
              ? "The model's answer could not be read: it was not valid JSON"
              : "The model's answer could not be read: the stream broke off";
    this.logger.warn(`LLM request failed: ${redactUrlCredentials(describeFault(error))}`);
    return new GatewayError(GatewayErrorCode.LLM_ERROR, 'Failed to process request', detail);
  }
}

/**
 * What went wrong, for the log, in one line when it is the model server's or the network's fault
 * (its message and cause); with its stack when it may be ours (a TypeError, RangeError or
 * ReferenceError).
 */
function describeFault(error: unknown): string {
  if (error instanceof APIError) {
    const cause = (error.cause as Error | undefined)?.message;
    return cause && !error.message.includes(cause) ? `${error.message} (${cause})` : error.message;
  }
  const ours = error instanceof TypeError || error instanceof RangeError || error instanceof ReferenceError;
  return ours ? (error.stack ?? String(error)) : String(error);
}

/** Why a model request is ended when its caller leaves the conversation before it is read (one object: an abort's default reason costs a stack trace). */
const LEFT_EARLY = new Error('The caller left the conversation');

/** A streamed reply put together: its text, whether it reasoned, its tool calls by index. */
class ReplyAssembler {
  private chunks = 0;
  private content = '';
  private reasoned = false;
  private readonly calls: LlmToolCall[] = [];
  private reported?: number;
  /** When the first piece of the reply came (text, reasoning or a tool call): the model's time to first token. */
  firstTokenAt?: number;

  /** Adds a chunk; returns the piece of the answer's text it carried, if any. */
  add(chunk: ChatCompletionChunk): string | undefined {
    this.chunks += 1;
    const usage = chunk.usage;
    if (usage && Number.isFinite(usage.prompt_tokens) && Number.isFinite(usage.completion_tokens))
      this.reported = Math.max(0, usage.prompt_tokens) + Math.max(0, usage.completion_tokens);
    const delta = chunk.choices?.[0]?.delta as (ChatCompletionChunk.Choice.Delta & { reasoning_content?: unknown; reasoning?: unknown }) | undefined;
    if (!delta) return undefined;
    if (this.firstTokenAt === undefined && (delta.content || delta.reasoning_content || delta.reasoning || delta.tool_calls))
      this.firstTokenAt = performance.now();
    if (delta.content) this.content += delta.content;
    if (delta.reasoning_content || delta.reasoning) this.reasoned = true;
    for (const call of delta.tool_calls ?? []) {
      const slot = (this.calls[call.index] ??= { id: '', name: '', arguments: '' });
      if (call.id) slot.id = call.id;
      if (call.function?.name) slot.name += call.function.name;
      if (call.function?.arguments) slot.arguments += call.function.arguments;
    }
    return delta.content || undefined;
  }

  /** The tokens the call used: as the server reported them, or estimated from the characters of the request and the reply. */
  usage(request: CompletionRequest): ModelUsage {
    if (this.reported !== undefined) return { tokens: this.reported, reported: true };
    const sent = JSON.stringify(request.messages).length + (request.tools.length > 0 ? JSON.stringify(request.tools).length : 0);
    const written = this.content.length + this.calls.reduce((sum, call) => sum + (call ? call.name.length + call.arguments.length : 0), 0);
    return { tokens: Math.ceil((sent + written) / CHARS_PER_TOKEN), reported: false };
  }

  /** The reply; LLM_ERROR for a stream without a single chunk (a body that is not an event stream reads as one) or with only reasoning. */
  finish(): LlmReply {
    if (this.chunks === 0) {
      throw new GatewayError(
        GatewayErrorCode.LLM_ERROR,
        'Failed to process request',
        "The model's answer could not be read: it was not an event stream of chunks",
      );
    }
    const content = stripHiddenText(this.content);
    const toolCalls = this.calls.filter((call) => call !== undefined && call.name !== '');
    const reasoned = this.reasoned || /<\/think>/i.test(this.content);
    if (content === '' && toolCalls.length === 0 && reasoned) {
      throw new GatewayError(GatewayErrorCode.LLM_ERROR, 'Failed to process request', 'The model wrote only its reasoning and no answer');
    }
    return { content, toolCalls };
  }
}
