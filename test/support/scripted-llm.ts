import { createServer, IncomingMessage, Server, ServerResponse } from 'http';
import type { AddressInfo, Socket } from 'net';

/** A request the gateway made, as the scripted server received it. */
export interface ChatRequest {
  model: string;
  messages: { role: string; content?: string | null; tool_calls?: any[]; tool_call_id?: string }[];
  tools?: { type: string; function: { name: string; description?: string; parameters?: unknown } }[];
  temperature?: number;
  max_tokens?: number;
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  headers: IncomingMessage['headers'];
}

/** The tokens an answer reports in its last chunk, when the request asked for usage. */
export interface ScriptedUsage {
  prompt_tokens: number;
  completion_tokens: number;
}

export interface ScriptedToolCall {
  name: string;
  /** An object is sent as JSON; a string is sent as is (so it can be malformed). */
  arguments?: unknown;
  id?: string;
}

/** How a streamed answer is paced, like a real model: the first token after a while, then a steady rate. */
export interface Pace {
  firstTokenMs: number;
  tokensPerSecond: number;
}

interface AnswerOptions {
  delayMs?: number;
  /** Stream token by token at this pace instead of all at once. */
  pace?: Pace;
  /** Reasoning sent first as `reasoning_content` deltas (vLLM's reasoning parsers, DeepSeek). */
  reasoning?: string;
  /**
   * The usage its last chunk reports when the request asks (`stream_options.include_usage`), as
   * vLLM and OpenAI send it (a chunk with no choices); `false` sends none, as servers that ignore
   * the option do. Default: `{prompt_tokens: 10, completion_tokens: 5}`.
   */
  usage?: ScriptedUsage | false;
}

export const DEFAULT_USAGE: ScriptedUsage = { prompt_tokens: 10, completion_tokens: 5 };

/** One model answer, or a fault. */
export type ScriptedReply = ({ text: string } & AnswerOptions) | ({ toolCalls: ScriptedToolCall[]; text?: string } & AnswerOptions) | { fault: ScriptedFault };

/**
 * What a broken model server does: answer HTTP 500 or 404, never answer (`hang`), cut its
 * stream mid-way (`cut`), stop writing mid-stream without closing (`stall`), stream a chunk that
 * is not JSON (`badJson`), answer 200 with a body that is not an event stream (`garbage`), or
 * stream an `error` event mid-answer as vLLM does when generation fails (`errorEvent`).
 */
export type ScriptedFault = 'http500' | 'http404' | 'hang' | 'cut' | 'stall' | 'badJson' | 'garbage' | 'errorEvent';

/** What happened to one streamed answer: when each piece of text left, and whether the gateway hung up first. */
export interface StreamRecord {
  /** Each content delta with the `performance.now()` time it was written. */
  sent: { text: string; at: number }[];
  /** When the client closed the request before the answer ended, if it did. */
  closedEarlyAt?: number;
  finished: boolean;
}

/** Text as a model streams it: a word with the space before it, one CJK character, or one sign. */
const tokensOf = (text: string): string[] => text.match(/\s*[\p{L}\p{N}_]+|\s*[^\s\p{L}\p{N}_]|\s+/gu) ?? [];
/**
 * Unpaced text in pieces of 7 characters, as a model's tokens come; a text so long that its
 * pieces would number more than 2,000 is cut into 2,000, so a test of a 500 KB answer measures the
 * gateway, not the `openai` package's cost per event.
 */
const piecesOf = (text: string): string[] => text.match(new RegExp(`[\\s\\S]{1,${Math.max(7, Math.ceil(text.length / 2000))}}`, 'g')) ?? [];
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export type Script = ScriptedReply | ((request: ChatRequest) => ScriptedReply);

/** The last user message of a request. */
export function lastUserText(request: ChatRequest): string {
  return [...request.messages].reverse().find((m) => m.role === 'user')?.content ?? '';
}

/** The tool results fed back in a request, by tool call id. */
export function toolResults(request: ChatRequest): Record<string, any> {
  const results: Record<string, any> = {};
  for (const message of request.messages) {
    if (message.role === 'tool' && message.tool_call_id) {
      try {
        results[message.tool_call_id] = JSON.parse(message.content ?? 'null');
      } catch {
        results[message.tool_call_id] = message.content;
      }
    }
  }
  return results;
}

/**
 * An OpenAI-compatible chat-completions server for tests: answers are scripted, in order, and
 * streamed the way vLLM streams them (role chunk, content deltas, tool-call deltas split mid
 * JSON, a finish chunk, `[DONE]`). Faults ({@link ScriptedFault}): HTTP 500 (with a secret in
 * the body, which must not reach clients), HTTP 404, a request that never answers, a stream cut
 * or stalled before it finishes, chunks that are not JSON, an `error` event.
 * Without a script entry it echoes the user's text.
 */
export class ScriptedLlm {
  readonly requests: ChatRequest[] = [];
  /** The streamed answers, in the order of `requests`. */
  readonly streams: StreamRecord[] = [];
  private readonly script: Script[] = [];
  private readonly sockets = new Set<Socket>();
  private counter = 0;
  /** Kept, so the server can come back on the same port after {@link close}. */
  private port = 0;

  private constructor(private readonly server: Server) {
    server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
  }

  static async start(): Promise<ScriptedLlm> {
    const server = createServer();
    const llm = new ScriptedLlm(server);
    server.on('request', (request, response) => void llm.handle(request, response));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    llm.port = (server.address() as AddressInfo).port;
    return llm;
  }

  get baseUrl(): string {
    return `http://127.0.0.1:${this.port}/v1/`;
  }

  /** Queues answers for the next requests, in order. */
  reply(...replies: Script[]): this {
    this.script.push(...replies);
    return this;
  }

  /** Forgets the queued answers and the recorded requests. */
  reset(): void {
    this.script.length = 0;
    this.requests.length = 0;
    this.streams.length = 0;
  }

  get pending(): number {
    return this.script.length;
  }

  async close(): Promise<void> {
    this.sockets.forEach((socket) => socket.destroy());
    await new Promise((resolve) => this.server.close(resolve));
  }

  /** Listens again on the port it had before {@link close}: the model server is back. */
  async resume(): Promise<void> {
    await new Promise<void>((resolve, reject) => this.server.once('error', reject).listen(this.port, '127.0.0.1', resolve));
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    let body = '';
    for await (const chunk of request) body += chunk;
    if (request.method === 'GET' && request.url?.endsWith('/models')) {
      response
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ object: 'list', data: [{ id: 'scripted', object: 'model', owned_by: 'test' }] }));
      return;
    }
    if (request.method !== 'POST' || !request.url?.endsWith('/chat/completions')) {
      response.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'not found' } }));
      return;
    }
    const chat = { ...JSON.parse(body), headers: request.headers } as ChatRequest;
    this.requests.push(chat);
    const next: Script = this.script.shift() ?? ((r: ChatRequest) => ({ text: `You said: ${lastUserText(r)}` }));
    const reply: ScriptedReply = typeof next === 'function' ? next(chat) : next;

    if ('fault' in reply) return this.fault(reply.fault, response);
    if (reply.delayMs) await new Promise((resolve) => setTimeout(resolve, reply.delayMs));
    const id = `chatcmpl-${++this.counter}`;
    const chunk = (delta: object, finish: string | null = null) =>
      `data: ${JSON.stringify({
        id,
        object: 'chat.completion.chunk',
        created: Math.floor(Date.now() / 1000),
        model: chat.model,
        choices: [{ index: 0, delta, finish_reason: finish }],
      })}\n\n`;

    const text = 'text' in reply ? (reply.text ?? '') : '';
    const toolCalls = 'toolCalls' in reply ? reply.toolCalls : [];
    const toolParts: string[] = [];
    toolCalls.forEach((call, index) => {
      const args = typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments ?? {});
      toolParts.push(
        chunk({ tool_calls: [{ index, id: call.id ?? `call_${this.counter}_${index}`, type: 'function', function: { name: call.name, arguments: '' } }] }),
      );
      // Five characters a delta, as a model's tokens come; at most about 1,000 deltas for huge arguments, so a fault test stays quick.
      const pieceLength = Math.max(5, Math.ceil(args.length / 1000));
      for (let at = 0; at < args.length; at += pieceLength)
        toolParts.push(chunk({ tool_calls: [{ index, function: { arguments: args.slice(at, at + pieceLength) } }] }));
    });
    const finish = chunk({}, toolCalls.length > 0 ? 'tool_calls' : 'stop');

    if (chat.stream) {
      const record: StreamRecord = { sent: [], finished: false };
      this.streams.push(record);
      response.on('close', () => {
        if (!record.finished) record.closedEarlyAt = performance.now();
      });
      response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      const write = (part: string) => record.closedEarlyAt === undefined && response.write(part);
      write(chunk({ role: 'assistant', content: '' }));
      for (const piece of reply.reasoning ? tokensOf(reply.reasoning) : []) write(chunk({ reasoning_content: piece }));
      const pieces = reply.pace ? tokensOf(text) : piecesOf(text);
      if (reply.pace) await sleep(reply.pace.firstTokenMs);
      for (const piece of pieces) {
        if (record.closedEarlyAt !== undefined) return;
        write(chunk({ content: piece }));
        record.sent.push({ text: piece, at: performance.now() });
        if (reply.pace) await sleep(1000 / reply.pace.tokensPerSecond);
      }
      for (const part of toolParts) write(part);
      write(finish);
      const usage = reply.usage ?? DEFAULT_USAGE;
      if (chat.stream_options?.include_usage && usage)
        write(
          `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: 0, model: chat.model, choices: [], usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens } })}\n\n`,
        );
      record.finished = true;
      response.end('data: [DONE]\n\n');
      return;
    }
    response.writeHead(200, { 'content-type': 'application/json' }).end(
      JSON.stringify({
        id,
        object: 'chat.completion',
        created: Math.floor(Date.now() / 1000),
        model: chat.model,
        choices: [
          {
            index: 0,
            finish_reason: toolCalls.length > 0 ? 'tool_calls' : 'stop',
            message: {
              role: 'assistant',
              content: text,
              tool_calls: toolCalls.map((call, index) => ({
                id: call.id ?? `call_${this.counter}_${index}`,
                type: 'function',
                function: { name: call.name, arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments ?? {}) },
              })),
            },
          },
        ],
      }),
    );
  }

  private fault(kind: ScriptedFault, response: ServerResponse): void {
    const firstChunk = `data: ${JSON.stringify({ id: 'f', object: 'chat.completion.chunk', created: 0, model: 'm', choices: [{ index: 0, delta: { role: 'assistant', content: 'Half an ans' }, finish_reason: null }] })}\n\n`;
    switch (kind) {
      case 'http500':
        response.writeHead(500, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ error: { message: 'CUDA out of memory; api_key=sk-secret-123' } }));
        return;
      case 'http404':
        response.writeHead(404, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ error: { message: 'The model `Qwen3` does not exist.' } }));
        return;
      case 'hang':
        return;
      case 'cut':
        response.writeHead(200, { 'content-type': 'text/event-stream' });
        response.write(firstChunk);
        setTimeout(() => response.socket?.destroy(), 20);
        return;
      case 'stall':
        response.writeHead(200, { 'content-type': 'text/event-stream' });
        response.write(firstChunk);
        return;
      case 'badJson':
        response.writeHead(200, { 'content-type': 'text/event-stream' });
        response.end(`${firstChunk}data: {"choices": [{"delta": {"content": "unterminated\n\ndata: [DONE]\n\n`);
        return;
      case 'garbage':
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end('<html>502 Bad Gateway</html>');
        return;
      case 'errorEvent':
        response.writeHead(200, { 'content-type': 'text/event-stream' });
        response.end(
          `${firstChunk}data: ${JSON.stringify({ error: { message: 'CUDA out of memory; api_key=sk-secret-123', type: 'InternalServerError', code: 500 } })}\n\n`,
        );
        return;
    }
  }
}
