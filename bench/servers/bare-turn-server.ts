import { randomUUID } from 'crypto';
import { readFileSync } from 'fs';
import { IncomingMessage } from 'http';
import OpenAI from 'openai';
import type { ChatCompletionCreateParamsStreaming } from 'openai/resources/chat/completions';
import { WebSocket, WebSocketServer } from 'ws';
import { httpFetch } from '../../src/assistant/llm/http-fetch';
import { SentenceSplitter } from '../../src/assistant/speech/sentence-splitter';

/**
 * The baseline of the LLM turn: a bare `ws` server that does the least a voice turn needs with
 * the `openai` package, and nothing else: no framework, validation, session, history, speech
 * cleaning or timing. On `text_input` it says `processing`, streams the completion (the very
 * request body the gateway sent, `BENCH_TURN_REQUEST`, with the user's text put in), sends each
 * sentence when the connection streams, then the final `llm_response` and `idle`. It uses the
 * gateway's own `fetch` for `openai` (Node's HTTP client), so the difference is the gateway's
 * work, not the HTTP client's; `BENCH_BARE_FETCH=undici` gives it `openai`'s default fetch.
 */
const TOKEN = process.env.BENCH_TOKEN ?? '';
const template = JSON.parse(readFileSync(process.env.BENCH_TURN_REQUEST ?? '', 'utf8')) as ChatCompletionCreateParamsStreaming;
const client = new OpenAI({
  baseURL: process.env.LLM_BASE_URL,
  apiKey: 'none',
  maxRetries: 0,
  ...(process.env.BENCH_BARE_FETCH !== 'undici' && { fetch: httpFetch }),
});

const server = new WebSocketServer({
  host: '127.0.0.1',
  port: Number(process.env.PORT),
  verifyClient: ({ req }: { req: IncomingMessage }) => req.headers.authorization === `Bearer ${TOKEN}`,
});

const frame = (fields: object) => JSON.stringify({ ...fields, timestamp: new Date().toISOString() });

server.on('connection', (socket) => {
  const sessionId = randomUUID();
  let stream = false;
  socket.send(frame({ type: 'status', status: 'connected', data: { session_id: sessionId } }));
  socket.on('message', (data) => {
    const request = JSON.parse(data.toString());
    if (request.type === 'configure') stream = request.stream === true;
    else if (request.type === 'text_input') void turn(socket, request.text, stream, sessionId);
  });
});

async function turn(socket: WebSocket, text: string, stream: boolean, sessionId: string): Promise<void> {
  socket.send(frame({ type: 'status', status: 'processing', data: {} }));
  const [system] = template.messages;
  const chunks = await client.chat.completions.create({ ...template, messages: [system, { role: 'user', content: text }] });
  const splitter = new SentenceSplitter();
  let answer = '';
  let seq = 0;
  const say = (sentences: string[]) => {
    for (const sentence of sentences) socket.send(frame({ type: 'llm_response', content: sentence, tool_calls: [], is_final: false, seq: seq++ }));
  };
  for await (const chunk of chunks) {
    const delta = chunk.choices[0]?.delta?.content;
    if (!delta) continue;
    answer += delta;
    if (stream) say(splitter.push(delta));
  }
  if (stream) say(splitter.end());
  socket.send(frame({ type: 'llm_response', content: answer, tool_calls: [], is_final: true }));
  socket.send(frame({ type: 'status', status: 'idle', data: { session_id: sessionId } }));
}

process.on('SIGTERM', () => {
  server.clients.forEach((socket) => socket.terminate());
  server.close(() => process.exit(0));
});
