import { BeforeApplicationShutdown, Inject, Injectable } from '@nestjs/common';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import { randomUUID } from 'crypto';
import type { ServerResponse } from 'http';
import { GATEWAY_CONFIG, GatewayConfig } from '../../config/gateway-config';
import type { AuthenticatedRequest } from '../../core/auth/bearer-auth.guard';
import { FRAME_MAX_DEPTH, withinDepth } from '../../core/validation/frame-schema';
import { initializeParamsProblem } from '../request-params';
import { jsonRpcError, requestIdOf, SERVER_ERROR } from '../mcp.errors';
import { McpService } from '../mcp.service';

const STREAMABLE_HTTP_METHODS = ['GET', 'POST', 'DELETE'];

/** The SDK's code for an unknown or expired Streamable HTTP session. */
const SESSION_NOT_FOUND = -32001;

/**
 * One Streamable HTTP session: its SDK server and transport, who started it, and how many of
 * its requests (an SSE stream counts until it ends) are still open; it expires only when none is.
 */
class HttpSession {
  private open = 0;
  private idleTimer?: NodeJS.Timeout;
  private closed = false;

  constructor(
    readonly principal: string | undefined,
    readonly transport: StreamableHTTPServerTransport,
    private readonly server: Server,
    private readonly idleTimeoutMs: number,
    onClosed: () => void,
  ) {
    transport.onclose = () => {
      this.closed = true;
      clearTimeout(this.idleTimer);
      onClosed();
    };
    void server.connect(transport);
  }

  async serve(request: AuthenticatedRequest, response: ServerResponse, body: unknown): Promise<void> {
    this.open += 1;
    clearTimeout(this.idleTimer);
    response.once('close', () => {
      this.open -= 1;
      if (this.open === 0 && !this.closed) this.idleTimer = setTimeout(() => void this.close(), this.idleTimeoutMs);
    });
    await this.transport.handleRequest(request, response, body);
  }

  /** Closes the SDK server, which closes the transport and ends its open streams. */
  close(): Promise<void> {
    return this.server.close();
  }
}

/**
 * MCP Streamable HTTP sessions on `/mcp`, the SDK's `StreamableHTTPServerTransport` doing the
 * protocol (POST messages, GET for the server's stream, DELETE to end). An `initialize` POST
 * without a session starts one, with an SDK server of its own; later requests carry its
 * `Mcp-Session-Id` and must come from the principal that started it. A session ends on DELETE,
 * after `CLOUD_SESSION_TIMEOUT` with no request or stream open, or at shutdown.
 */
@Injectable()
export class McpHttpSessions implements BeforeApplicationShutdown {
  private readonly sessions = new Map<string, HttpSession>();

  constructor(
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
    private readonly mcp: McpService,
  ) {}

  get size(): number {
    return this.sessions.size;
  }

  async handle(request: AuthenticatedRequest, response: ServerResponse, body: unknown): Promise<void> {
    if (!STREAMABLE_HTTP_METHODS.includes(request.method ?? '')) {
      response.setHeader('Allow', STREAMABLE_HTTP_METHODS.join(', '));
      return reply(response, 405, SERVER_ERROR, 'Method not allowed: Streamable HTTP uses GET, POST and DELETE');
    }
    // The SDK's own parsing recurses: a body nested 10,000 deep overflowed the stack there.
    if (!withinDepth(body, FRAME_MAX_DEPTH)) {
      return reply(response, 400, ErrorCode.InvalidRequest, `Invalid Request: the message nests deeper than ${FRAME_MAX_DEPTH} levels`, requestIdOf(body));
    }
    const sessionId = request.headers['mcp-session-id'];
    if (sessionId !== undefined) {
      const session = typeof sessionId === 'string' ? this.sessions.get(sessionId) : undefined;
      if (!session || session.principal !== request.principal) {
        return reply(response, 404, SESSION_NOT_FOUND, 'Session not found: start a new one with an initialize request');
      }
      return session.serve(request, response, body);
    }
    if (request.method !== 'POST' || !isInitializeCall(body)) {
      return reply(response, 400, SERVER_ERROR, 'Bad Request: no Mcp-Session-Id; start a session with an initialize request');
    }
    const problem = initializeParamsProblem(body);
    if (problem !== undefined) {
      return reply(response, 400, ErrorCode.InvalidParams, `Invalid initialize params: ${problem}`, requestIdOf(body));
    }
    const session = this.start(request.principal);
    await session.serve(request, response, body);
    // An initialize the SDK refused leaves no session behind.
    if (!session.transport.sessionId) await session.close();
  }

  async beforeApplicationShutdown(): Promise<void> {
    await Promise.all([...this.sessions.values()].map((session) => session.close()));
  }

  private start(principal: string | undefined): HttpSession {
    const sessionId = randomUUID();
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => sessionId,
      onsessioninitialized: () => void this.sessions.set(sessionId, session),
    });
    const server = this.mcp.createServer({ principal, connectionId: sessionId });
    const session = new HttpSession(principal, transport, server, this.config.session.timeoutMs, () => this.sessions.delete(sessionId));
    return session;
  }
}

/** Whether `body` is a JSON-RPC `initialize` request, its params right or wrong. */
function isInitializeCall(body: unknown): boolean {
  const message = body as { jsonrpc?: unknown; method?: unknown; id?: unknown } | null;
  return message?.jsonrpc === '2.0' && message.method === 'initialize' && requestIdOf(message) !== null;
}

function reply(response: ServerResponse, status: number, code: number, message: string, id: string | number | null = null): void {
  response.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify(jsonRpcError(id, code, message)));
}
