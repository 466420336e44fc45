import type { IncomingMessage, ServerResponse } from 'http';
import { ScriptedHttpServer } from './scripted-http-server';

/** An upload to `/v1/audio/transcriptions`, as the scripted server received it. */
export interface TranscriptionRequest {
  model: string;
  language?: string;
  responseFormat?: string;
  file: { name: string; type: string; bytes: Uint8Array };
  headers: IncomingMessage['headers'];
}

/**
 * What a broken transcription server does: answer HTTP 500 (a secret in its body, which must not
 * reach the error's message) or 401, never answer (`hang`), answer 200 with an HTML page
 * (`garbage`), with nothing (`empty`), or with JSON that has no `text` (`noText`).
 */
export type TranscriptionFault = 'http500' | 'http401' | 'hang' | 'garbage' | 'empty' | 'noText';

export type TranscriptionReply = { text: string; language?: string; delayMs?: number } | { fault: TranscriptionFault };

/**
 * An OpenAI-compatible transcription server for tests, on 127.0.0.1 and a free port: it parses
 * each multipart upload (with the platform's own `Request.formData()`), records it, and answers
 * the next scripted reply, or `scripted transcript` when none is queued.
 */
export class ScriptedTranscriptionServer extends ScriptedHttpServer<TranscriptionReply> {
  readonly requests: TranscriptionRequest[] = [];
  /** Requests whose client hung up before the answer was sent. */
  closedEarly = 0;

  static start(): Promise<ScriptedTranscriptionServer> {
    return new ScriptedTranscriptionServer().listen();
  }

  reset(): void {
    this.script.length = 0;
    this.requests.length = 0;
    this.closedEarly = 0;
  }

  protected async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    if (request.method !== 'POST' || !request.url?.endsWith('/audio/transcriptions')) {
      response.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'not found' } }));
      return;
    }
    response.once('close', () => {
      if (!response.writableFinished) this.closedEarly += 1;
    });
    const form = await new Request('http://scripted/', {
      method: 'POST',
      headers: { 'content-type': request.headers['content-type'] ?? '' },
      body: Buffer.concat(chunks),
    }).formData();
    const file = form.get('file') as File;
    const field = (name: string) => (form.get(name) as string | null) ?? undefined;
    this.requests.push({
      model: String(form.get('model')),
      language: field('language'),
      responseFormat: field('response_format'),
      file: { name: file.name, type: file.type, bytes: new Uint8Array(await file.arrayBuffer()) },
      headers: request.headers,
    });
    const reply = this.script.shift() ?? { text: 'scripted transcript' };
    if ('fault' in reply) return this.fault(reply.fault, response);
    if (reply.delayMs) await new Promise((resolve) => setTimeout(resolve, reply.delayMs));
    if (response.destroyed) return;
    const body = reply.language === undefined ? { text: reply.text } : { text: reply.text, language: reply.language };
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  }

  private fault(fault: TranscriptionFault, response: ServerResponse): void {
    const json = (status: number, body: unknown) => response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (fault === 'hang') return;
    if (fault === 'http500') return void json(500, { error: { message: 'engine crashed, key sk-scripted-secret' } });
    if (fault === 'http401') return void json(401, { error: { message: 'bad key' } });
    if (fault === 'noText') return void json(200, { transcript: 'wrong field' });
    if (fault === 'empty') return void response.writeHead(200, { 'content-type': 'text/plain' }).end();
    response.writeHead(200, { 'content-type': 'text/html' }).end('<html><body>502 Bad Gateway</body></html>');
  }
}
