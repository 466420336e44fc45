import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CallToolRequestSchema,
  CallToolResult,
  ErrorCode,
  ListResourcesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  ServerNotification,
  ServerRequest,
  Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { randomUUID } from 'crypto';
import { createServer, IncomingMessage, Server as HttpServer, ServerResponse } from 'http';
import type { AddressInfo, Socket } from 'net';

export interface UpstreamTool {
  tool: Tool;
  /**
   * `meta` is the request's `params._meta` (a caller's trace context travels there); `extra` is
   * the SDK's, for progress, log messages and requests to the client during the call.
   */
  run(
    args: Record<string, any>,
    meta?: Record<string, unknown>,
    extra?: RequestHandlerExtra<ServerRequest, ServerNotification>,
  ): Promise<CallToolResult> | CallToolResult;
}

/**
 * A real MCP server for tests, written with the SDK's own server classes: Streamable HTTP at
 * `/mcp` (stateful sessions, as most remote servers run) and the older SSE transport at `/sse`,
 * both behind a bearer token. Tools can be added and removed while it runs (each session is
 * told with `tools/list_changed`), and it can be killed (every socket destroyed, sessions
 * forgotten) and started again on the same port, like a server that restarts.
 */
export class HttpUpstream {
  readonly tools = new Map<string, UpstreamTool>();
  /** Text resources by URI, served when there are any (set before the gateway connects). */
  readonly resources = new Map<string, string>();
  /** The `_meta` of every resource read it answered. */
  readonly readMeta: (Record<string, unknown> | undefined)[] = [];
  /** Every request the upstream received, with its headers. */
  readonly requests: IncomingMessage[] = [];
  private readonly servers = new Set<Server>();
  private readonly transports = new Map<string, Transport & { handleRequest?: unknown }>();
  private readonly sockets = new Set<Socket>();
  private http?: HttpServer;
  private port = 0;

  constructor(private readonly token: string) {}

  static async start(token: string, tools: UpstreamTool[]): Promise<HttpUpstream> {
    const upstream = new HttpUpstream(token);
    tools.forEach((tool) => upstream.tools.set(tool.tool.name, tool));
    await upstream.listen();
    return upstream;
  }

  url(path: '/mcp' | '/sse' = '/mcp'): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  get sessions(): number {
    return this.transports.size;
  }

  /** Adds or replaces a tool and tells every session. */
  async setTool(tool: UpstreamTool): Promise<void> {
    this.tools.set(tool.tool.name, tool);
    await this.announce();
  }

  async removeTool(name: string): Promise<void> {
    this.tools.delete(name);
    await this.announce();
  }

  /** Dies at once: open streams and requests cut, sessions lost, the port closed. */
  async kill(): Promise<void> {
    const http = this.http;
    this.http = undefined;
    this.sockets.forEach((socket) => socket.destroy());
    this.transports.clear();
    await Promise.all([...this.servers].map((server) => server.close().catch(() => undefined)));
    this.servers.clear();
    if (http) await new Promise((resolve) => http.close(resolve));
  }

  /** Listens again on the same port, as a restarted server would. */
  restart(): Promise<void> {
    return this.listen();
  }

  private listen(): Promise<void> {
    const http = createServer((request, response) => void this.handle(request, response));
    http.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
    this.http = http;
    return new Promise((resolve, reject) => {
      http.once('error', reject);
      http.listen(this.port, '127.0.0.1', () => {
        this.port = (http.address() as AddressInfo).port;
        resolve();
      });
    });
  }

  private async announce(): Promise<void> {
    await Promise.all([...this.servers].map((server) => server.sendToolListChanged().catch(() => undefined)));
  }

  private newServer(): Server {
    const server = new Server(
      { name: 'test-home', version: '1.0.0' },
      {
        capabilities: { tools: { listChanged: true }, logging: {}, ...(this.resources.size > 0 && { resources: {} }) },
      },
    );
    if (this.resources.size > 0) {
      server.setRequestHandler(ListResourcesRequestSchema, () => ({ resources: [...this.resources.keys()].map((uri) => ({ uri, name: uri })) }));
      server.setRequestHandler(ReadResourceRequestSchema, ({ params }) => {
        this.readMeta.push(params._meta);
        return { contents: [{ uri: params.uri, text: this.resources.get(params.uri) ?? '' }] };
      });
    }
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [...this.tools.values()].map((entry) => entry.tool) }));
    server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
      const entry = this.tools.get(request.params.name);
      if (!entry) throw new McpError(ErrorCode.InvalidParams, `Unknown tool ${request.params.name}`);
      return entry.run(request.params.arguments ?? {}, request.params._meta, extra);
    });
    this.servers.add(server);
    server.onclose = () => this.servers.delete(server);
    return server;
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    this.requests.push(request);
    if (request.headers.authorization !== `Bearer ${this.token}`) {
      response.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ error: `bad token, expected ${this.token}` }));
      return;
    }
    const path = new URL(request.url ?? '/', 'http://localhost').pathname;
    if (path === '/mcp') return this.streamableHttp(request, response);
    if (path === '/sse' && request.method === 'GET') return this.openSse(response);
    if (path === '/messages' && request.method === 'POST') return this.ssePost(request, response);
    response.writeHead(404).end();
  }

  private async streamableHttp(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const sessionId = request.headers['mcp-session-id'];
    if (typeof sessionId === 'string') {
      const transport = this.transports.get(sessionId) as StreamableHTTPServerTransport | undefined;
      if (!transport) {
        response
          .writeHead(404, { 'content-type': 'application/json' })
          .end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null }));
        return;
      }
      return transport.handleRequest(request, response);
    }
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: randomUUID,
      onsessioninitialized: (id) => void this.transports.set(id, transport),
    });
    transport.onclose = () => transport.sessionId && this.transports.delete(transport.sessionId);
    await this.newServer().connect(transport);
    await transport.handleRequest(request, response);
  }

  private async openSse(response: ServerResponse): Promise<void> {
    const transport = new SSEServerTransport('/messages', response);
    this.transports.set(transport.sessionId, transport);
    transport.onclose = () => this.transports.delete(transport.sessionId);
    await this.newServer().connect(transport);
  }

  private async ssePost(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const sessionId = new URL(request.url ?? '/', 'http://localhost').searchParams.get('sessionId') ?? '';
    const transport = this.transports.get(sessionId) as SSEServerTransport | undefined;
    if (!transport) {
      response.writeHead(404).end();
      return;
    }
    await transport.handlePostMessage(request, response);
  }
}

/** A text result, as most tools answer. */
export const text = (value: string): CallToolResult => ({ content: [{ type: 'text', text: value }] });
