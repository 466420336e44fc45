import { Agent as HttpAgent, IncomingMessage, request as httpRequest } from 'http';
import { Agent as HttpsAgent, request as httpsRequest } from 'https';
import { wholeEvents } from './whole-events';

/** Connections to the model server kept open between requests (a turn after a turn reuses one). */
const agents = { 'http:': new HttpAgent({ keepAlive: true }), 'https:': new HttpsAgent({ keepAlive: true }) };

/** Node's HTTP client where `fetch` would be: what `openai` needs of a response, the body as a Node stream. */
function responseOf(message: IncomingMessage, url: string) {
  const headers = new Headers();
  for (const [name, value] of Object.entries(message.headers)) {
    if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
  }
  const status = message.statusCode ?? 0;
  const text = async () => {
    let body = '';
    for await (const chunk of message) body += chunk;
    return body;
  };
  return {
    ok: status >= 200 && status < 300,
    status,
    statusText: message.statusMessage ?? '',
    url,
    headers,
    /** `openai` reads a body that is async-iterable as it is, without web streams. */
    body: headers.get('content-type')?.startsWith('text/event-stream') ? wholeEvents(message) : message,
    text,
    json: async () => JSON.parse(await text()) as unknown,
  };
}

/**
 * The `fetch` the `openai` client is given: Node's `http`/`https` with keep-alive, instead of the
 * global `fetch` (undici and web streams), which cost a turn more CPU than the rest of the
 * client did (BENCHMARKS.md). It serves `openai`'s own requests only: a method, headers, a
 * string body and an abort signal, and a streamed or JSON answer.
 */
export const httpFetch = ((input: string | URL, init: RequestInit = {}) =>
  new Promise((resolve, reject) => {
    const url = new URL(String(input));
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const request = send(url, {
      method: init.method ?? 'GET',
      agent: agents[url.protocol as keyof typeof agents],
      headers: Object.fromEntries(new Headers(init.headers).entries()),
      signal: init.signal ?? undefined,
    });
    request.once('response', (message) => resolve(responseOf(message, url.href)));
    request.once('error', reject);
    request.end(typeof init.body === 'string' ? init.body : undefined);
  })) as unknown as typeof fetch;
