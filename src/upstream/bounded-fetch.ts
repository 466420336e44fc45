import type { FetchLike, RequestId } from '@modelcontextprotocol/client';
import { BoundedLineSplitter } from './bounded-lines';
import { answeredRequestIdOfLine, DroppedMessage, OversizedAnswer, oversizedAnswer, oversizedAnswerError } from './oversized-answer';

const NEWLINE = Buffer.from('\n');

type Body = ReadableStream<Uint8Array>;

/** The id of the JSON-RPC request a POST carried; read only once its answer turns out too large. */
function requestIdOf(body: unknown): RequestId | undefined {
  if (typeof body !== 'string') return undefined;
  try {
    const message = JSON.parse(body) as { method?: unknown; id?: unknown };
    const { id } = message;
    return typeof message.method === 'string' && (typeof id === 'string' || typeof id === 'number') ? id : undefined;
  } catch {
    return undefined;
  }
}

/** `read`, run the first time its value is needed. */
function once<T>(read: () => T): () => T {
  let value: { read: T } | undefined;
  return () => (value ??= { read: read() }).read;
}

function mediaType(response: Response): string | undefined {
  return response.headers.get('content-type')?.split(';')[0].trim().toLowerCase();
}

/** `response` with another body; its length and encoding headers, which described the old one, dropped. */
function withBody(response: Response, body: Body | Buffer | string): Response {
  const headers = new Headers(response.headers);
  headers.delete('content-length');
  headers.delete('content-encoding');
  return new Response(body, { status: response.status, statusText: response.statusText, headers });
}

/** The first `maxBytes` of a body (an error page the SDK quotes); the rest is not read. */
function cutAfter(body: Body, maxBytes: number): Body {
  let left = maxBytes;
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        if (left > 0) controller.enqueue(chunk.subarray(0, left));
        left -= chunk.byteLength;
        if (left <= 0) controller.terminate();
      },
    }),
  );
}

/** An event stream's `data:` line carrying `message`, ending its event when `endEvent`. */
const dataLine = (message: unknown, endEvent: boolean): Buffer => Buffer.from(`data: ${JSON.stringify(message)}\n${endEvent ? '\n' : ''}`);

/**
 * An event stream whose lines are each at most `maxBytes`. On the answer stream of one request
 * (a POST), a line past the bound ends the stream at once with a stand-in error for that
 * request, and the rest is not read. On a stream of many answers (the GET streams), the line is
 * read through unheld and replaced by a stand-in for the request it answered, when its ends
 * tell which; the stream goes on.
 */
function boundedEvents(body: Body, maxBytes: number, requestId: () => RequestId | undefined, onDropped: (message: DroppedMessage) => void): Body {
  let output!: TransformStreamDefaultController<Uint8Array>;
  const lines = new BoundedLineSplitter(
    maxBytes,
    (line) => {
      output.enqueue(line);
      output.enqueue(NEWLINE);
    },
    (line) => {
      const id = answeredRequestIdOfLine(line, 'data:');
      const answer = { maxBytes, bytes: line.bytes };
      onDropped({ ...answer, id });
      if (id !== undefined) output.enqueue(dataLine(oversizedAnswer(id, answer), false));
    },
  );
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        output = controller;
        lines.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
        if (!lines.overflowing) return;
        const id = requestId();
        if (id === undefined) return;
        onDropped({ maxBytes, id });
        controller.enqueue(dataLine(oversizedAnswer(id, { maxBytes }), true));
        controller.terminate();
      },
    }),
  );
}

/**
 * A JSON answer read whole up to `maxBytes`; past it (or when its length says so) reading stops
 * and the body becomes a stand-in error for the request.
 */
async function boundedJson(
  response: Response,
  body: Body,
  maxBytes: number,
  requestId: () => RequestId | undefined,
  onDropped: (message: DroppedMessage) => void,
): Promise<Response> {
  const declared = Number(response.headers.get('content-length'));
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  while (!(declared > maxBytes)) {
    const { done, value } = await reader.read();
    if (done) return withBody(response, Buffer.concat(chunks));
    bytes += value.byteLength;
    if (bytes > maxBytes) break;
    chunks.push(value);
  }
  await reader.cancel().catch(() => undefined);
  const answer: OversizedAnswer = declared > maxBytes ? { maxBytes, bytes: declared } : { maxBytes };
  const id = requestId();
  onDropped({ ...answer, id });
  if (id === undefined) throw oversizedAnswerError(answer);
  return withBody(response, JSON.stringify(oversizedAnswer(id, answer)));
}

/**
 * A `fetch` for the SDK's HTTP transports (Streamable HTTP, SSE) that never holds more than
 * `maxBytes` of one answer: JSON bodies are read up to the bound, event streams line by line
 * within it, error bodies cut at it. An answer past the bound becomes a JSON-RPC error for the
 * request it answered, so the call fails with a message naming the bound, and the connection,
 * its session and its other calls are untouched.
 */
export function boundedFetch(maxBytes: number, onDropped: (message: DroppedMessage) => void): FetchLike {
  return async (url, init) => {
    const response = await fetch(url, init);
    const { body } = response;
    if (!body || (response.status >= 300 && response.status < 400)) return response;
    if (!response.ok) return withBody(response, cutAfter(body, maxBytes));
    const requestId = once(() => requestIdOf(init?.body));
    if (mediaType(response) === 'text/event-stream') return withBody(response, boundedEvents(body, maxBytes, requestId, onDropped));
    return boundedJson(response, body, maxBytes, requestId, onDropped);
  };
}
