import {
  acceptedContent,
  createMcpHandler,
  fromJsonSchema,
  inputRequired,
  McpServer,
  PROTOCOL_VERSION_META_KEY,
  ServerContext,
} from '@modelcontextprotocol/server';
import { createServer, IncomingMessage, Server as HttpServer, ServerResponse } from 'http';
import type { AddressInfo, Socket } from 'net';
import { Readable } from 'stream';
import type { ReadableStream as WebReadableStream } from 'stream/web';

/** The only revision a modern upstream speaks. */
export const MODERN_REVISION = '2026-07-28';

const NO_ARGUMENTS = fromJsonSchema<Record<string, never>>({ type: 'object', properties: {} });
const NAME_FORM = { type: 'object' as const, properties: { name: { type: 'string' as const } }, required: ['name'] };

/** The revision the request was sent in, as its `_meta` envelope names it (a 2025 request has none). */
const revisionOf = (ctx: ServerContext): string => String((ctx.mcpReq.envelope as Record<string, unknown> | undefined)?.[PROTOCOL_VERSION_META_KEY] ?? 'none');

/**
 * An MCP server on the official SDK 2.x: a tool `revision` (the revision its request came in),
 * a tool `chatty` (progress and a log message), a tool `ask_name` that asks the caller's name the 2026 way (an `input_required` answer, then
 * the retry that carries the answer), a text resource `modern://greeting` and a prompt `greet`;
 * and a tool for each of `extraTools`, which answers its own name.
 */
export function modernServer(extraTools: readonly string[] = []): McpServer {
  const server = new McpServer({ name: 'modern-upstream', version: '2.0.0' }, { capabilities: { logging: {} } });
  for (const name of extraTools)
    server.registerTool(name, { description: `Answers ${name}`, inputSchema: NO_ARGUMENTS }, () => ({ content: [{ type: 'text', text: name }] }));
  server.registerTool('revision', { description: 'Says which MCP revision it was called in', inputSchema: NO_ARGUMENTS }, (_args, ctx) => ({
    content: [{ type: 'text', text: revisionOf(ctx) }],
  }));
  server.registerTool('chatty', { description: 'Reports progress and logs while it runs', inputSchema: NO_ARGUMENTS }, async (_args, ctx) => {
    const progressToken = ctx.mcpReq._meta?.progressToken;
    if (progressToken !== undefined) await ctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken, progress: 1, total: 2 } });
    await ctx.mcpReq.log('info', 'half way', 'chatty');
    return { content: [{ type: 'text', text: 'done' }] };
  });
  server.registerTool('ask_name', { description: "Asks the user's name", inputSchema: NO_ARGUMENTS }, (_args, ctx) => {
    const answer = acceptedContent<{ name: string }>(ctx.mcpReq.inputResponses, 'name');
    if (!answer) return inputRequired({ inputRequests: { name: inputRequired.elicit({ message: 'Your name?', requestedSchema: NAME_FORM }) } });
    return { content: [{ type: 'text', text: `Hello ${answer.name}` }] };
  });
  server.registerResource('greeting', 'modern://greeting', { mimeType: 'text/plain' }, (uri) => ({
    contents: [{ uri: uri.href, mimeType: 'text/plain', text: 'Hello from 2026' }],
  }));
  server.registerPrompt('greet', { description: 'Greets in the modern way' }, () => ({
    messages: [{ role: 'user', content: { type: 'text', text: 'Say hello the 2026 way' } }],
  }));
  return server;
}

/** A `fetch` Request of a node one, its body read whole. */
async function webRequestOf(request: IncomingMessage, port: number): Promise<Request> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  const headers = new Headers();
  for (const [name, value] of Object.entries(request.headers)) if (typeof value === 'string') headers.set(name, value);
  const body = chunks.length > 0 ? Buffer.concat(chunks) : undefined;
  return new Request(`http://127.0.0.1:${port}${request.url}`, { method: request.method, headers, body });
}

/**
 * {@link modernServer} over Streamable HTTP at `/mcp`, on 127.0.0.1, speaking only 2026-07-28
 * (`createMcpHandler` with `legacy: 'reject'`: an `initialize` is refused).
 */
export class ModernHttpUpstream {
  /** The revision each request named in its `MCP-Protocol-Version` header, in order. */
  readonly revisions: (string | undefined)[] = [];
  private readonly extraTools: string[] = [];
  private readonly handler = createMcpHandler(() => modernServer(this.extraTools), { legacy: 'reject' });
  private readonly sockets = new Set<Socket>();
  private http?: HttpServer;

  static async start(): Promise<ModernHttpUpstream> {
    const upstream = new ModernHttpUpstream();
    await upstream.listen();
    return upstream;
  }

  url(): string {
    return `http://127.0.0.1:${(this.http!.address() as AddressInfo).port}/mcp`;
  }

  /** Adds a tool that answers its own name, and tells the open `subscriptions/listen` streams. */
  addTool(name: string): void {
    this.extraTools.push(name);
    this.handler.notify.toolsChanged();
  }

  async stop(): Promise<void> {
    await this.handler.close();
    this.sockets.forEach((socket) => socket.destroy());
    await new Promise<void>((resolve) => this.http?.close(() => resolve()) ?? resolve());
  }

  private async listen(): Promise<void> {
    this.http = createServer((request, response) => void this.serve(request, response));
    this.http.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    await new Promise<void>((resolve) => this.http!.listen(0, '127.0.0.1', resolve));
  }

  private async serve(request: IncomingMessage, response: ServerResponse): Promise<void> {
    this.revisions.push(request.headers['mcp-protocol-version'] as string | undefined);
    const answer = await this.handler.fetch(await webRequestOf(request, (this.http!.address() as AddressInfo).port));
    response.writeHead(answer.status, Object.fromEntries(answer.headers));
    if (!answer.body) return void response.end();
    const body = Readable.fromWeb(answer.body as WebReadableStream<Uint8Array>);
    response.on('close', () => body.destroy());
    body.pipe(response);
  }
}

/**
 * A script (CommonJS, for `node`) serving over stdio (`serveStdio` with `legacy: 'reject'`) a
 * server on the SDK 2.x that speaks only 2026-07-28: a tool `revision` (the revision its request came in) and a tool `ask_name` as
 * {@link modernServer}'s.
 */
export const MODERN_STDIO_SOURCE = `
const { McpServer, fromJsonSchema, inputRequired, acceptedContent, PROTOCOL_VERSION_META_KEY } = require(${JSON.stringify(require.resolve('@modelcontextprotocol/server'))});
const { serveStdio } = require(${JSON.stringify(require.resolve('@modelcontextprotocol/server/stdio'))});
const none = fromJsonSchema({ type: 'object', properties: {} });
serveStdio(() => {
const server = new McpServer({ name: 'modern-stdio', version: '2.0.0' });
server.registerTool('revision', { description: 'Says which MCP revision it was called in', inputSchema: none }, (_args, ctx) => ({
  content: [{ type: 'text', text: String(ctx.mcpReq.envelope?.[PROTOCOL_VERSION_META_KEY] ?? 'none') }],
}));
server.registerTool('ask_name', { description: "Asks the user's name", inputSchema: none }, (_args, ctx) => {
  const answer = acceptedContent(ctx.mcpReq.inputResponses, 'name');
  if (!answer) return inputRequired({ inputRequests: { name: inputRequired.elicit({ message: 'Your name?', requestedSchema: ${JSON.stringify(NAME_FORM)} }) } });
  return { content: [{ type: 'text', text: 'Hello ' + answer.name }] };
});
return server;
}, { legacy: 'reject' });
`;
