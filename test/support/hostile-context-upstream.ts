import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CallToolRequestSchema,
  CreateMessageResultSchema,
  ListResourcesRequestSchema,
  ListToolsRequestSchema,
  ReadResourceRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { randomUUID } from 'crypto';
import { createServer, Server as HttpServer } from 'http';
import type { AddressInfo, Socket } from 'net';

/** How many log messages `flood` sends during one call. */
export const FLOOD_MESSAGES = 20_000;

/**
 * An upstream MCP server that misbehaves within the protocol, for the gateway's bounds: a resource
 * whose read answers `hugeBytes` of text, a tool that floods its caller with log messages and
 * resource-list changes, and a tool that asks its caller's model something and waits for the
 * answer as long as its caller lets it. Streamable HTTP at `/mcp`, stateful, on 127.0.0.1.
 */
export class HostileContextUpstream {
  private readonly transports = new Map<string, StreamableHTTPServerTransport>();
  private readonly sockets = new Set<Socket>();
  /**
   * How each sampling request it sent ended without an answer: `cancelled` when its call's
   * cancellation came first, else the error it was answered with.
   */
  readonly unansweredQuestions: string[] = [];

  private constructor(
    private readonly http: HttpServer,
    private readonly hugeBytes: number,
  ) {}

  static async start(hugeBytes: number): Promise<HostileContextUpstream> {
    const http = createServer();
    const upstream = new HostileContextUpstream(http, hugeBytes);
    http.on('request', (request, response) => {
      const sessionId = request.headers['mcp-session-id'];
      const known = typeof sessionId === 'string' ? upstream.transports.get(sessionId) : undefined;
      if (known) return void known.handleRequest(request, response);
      const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: randomUUID,
        onsessioninitialized: (id) => void upstream.transports.set(id, transport),
      });
      void upstream
        .server()
        .connect(transport)
        .then(() => transport.handleRequest(request, response));
    });
    http.on('connection', (socket) => {
      upstream.sockets.add(socket);
      socket.once('close', () => upstream.sockets.delete(socket));
    });
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    return upstream;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.http.address() as AddressInfo).port}/mcp`;
  }

  async close(): Promise<void> {
    this.sockets.forEach((socket) => socket.destroy());
    await new Promise((resolve) => this.http.close(resolve));
  }

  private server(): Server {
    const server = new Server({ name: 'hostile', version: '1' }, { capabilities: { tools: {}, resources: { listChanged: true }, logging: {} } });
    server.setRequestHandler(ListResourcesRequestSchema, () => ({ resources: [{ uri: 'huge://file', name: 'huge' }] }));
    server.setRequestHandler(ReadResourceRequestSchema, ({ params }) => ({ contents: [{ uri: params.uri, text: 'x'.repeat(this.hugeBytes) }] }));
    server.setRequestHandler(ListToolsRequestSchema, () => ({
      tools: [
        { name: 'flood', description: 'Floods its caller', inputSchema: { type: 'object' } },
        { name: 'ask_forever', description: "Asks its caller's model", inputSchema: { type: 'object' } },
      ],
    }));
    server.setRequestHandler(CallToolRequestSchema, async ({ params }, extra) => {
      if (params.name === 'flood') {
        const sends: Promise<void>[] = [];
        for (let index = 0; index < FLOOD_MESSAGES; index++) {
          sends.push(extra.sendNotification({ method: 'notifications/message', params: { level: 'info', data: `message ${index}` } }));
          if (index % 1000 === 0) sends.push(server.sendResourceListChanged());
        }
        await Promise.allSettled(sends);
        return { content: [{ type: 'text', text: 'flooded' }] };
      }
      try {
        await extra.sendRequest(
          { method: 'sampling/createMessage', params: { messages: [{ role: 'user', content: { type: 'text', text: 'Well?' } }], maxTokens: 5 } },
          CreateMessageResultSchema,
          { signal: extra.signal, timeout: 600_000 },
        );
        return { content: [{ type: 'text', text: 'answered' }] };
      } catch (error) {
        this.unansweredQuestions.push(extra.signal.aborted ? 'cancelled' : (error as Error).message);
        throw error;
      }
    });
    return server;
  }
}
