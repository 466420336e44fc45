import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { ErrorCode, InitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { newId } from '../../../core/new-id';
import type { ServerResponse } from 'http';
import { GATEWAY_CONFIG, GatewayConfig } from '../../../config/gateway-config';
import { ANONYMOUS_PRINCIPAL } from '../../../core/auth/access-token.service';
import type { AuthenticatedRequest } from '../../../core/auth/bearer-auth.guard';
import { EventStreamLimits, eventStreamLimits, keepEventStream } from '../../../core/http/event-stream';
import { CallsInFlight } from '../../../core/limits/calls-in-flight';
import { DrainService } from '../../../core/lifecycle/drain.service';
import { ThrottledWarning } from '../../../core/logging/throttled-warning';
import { ToolCallScope } from '../../../core/tools/tool-call-scope';
import { FRAME_MAX_DEPTH, withinDepth } from '../../../core/validation/frame-schema';
import { MCP_PROTOCOL } from '../../mcp.constants';
import { jsonRpcError, requestIdOf, SERVER_ERROR, unrepresentableIdProblem } from '../../mcp.errors';
import { initializeParamsProblem } from '../../revisions/2025/request-params';
import { Sdk1Binder } from '../../revisions/2025/sdk1-binder';
import { HttpSession } from './http-session';
import { MCP_HTTP_SESSION_STORE, McpHttpSessionRecord, McpHttpSessionStore } from './mcp-http-session-store';
import { restoreInitializedSession } from './restore-initialized-session';

const STREAMABLE_HTTP_METHODS = ['GET', 'POST', 'DELETE'];

/** The SDK's code for an unknown or expired Streamable HTTP session. */
const SESSION_NOT_FOUND = -32001;

/** The shape of the session ids this gateway hands out (UUIDs); anything else is not looked up. */
const SESSION_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A session rebuilt here from its record, or why not. */
type Rebuilt = HttpSession | 'not-found' | 'full' | 'unavailable';

/**
 * MCP Streamable HTTP sessions on `/mcp` (the 2025 revisions, bound by `Sdk1Binder`), the SDK's `StreamableHTTPServerTransport` doing the
 * protocol (POST messages, GET for the server's stream, DELETE to end). An `initialize` POST
 * without a session starts one, with an SDK server of its own; later requests carry its
 * `Mcp-Session-Id` and must come from the principal that started it. A session ends on DELETE,
 * after `CLOUD_SESSION_TIMEOUT` with no request or stream open, or at shutdown.
 *
 * With `REDIS_URL` each session also has a record in Redis ({@link McpHttpSessionStore}), so it
 * lives on beyond the instance that started it: an instance asked for a session it does not hold
 * rebuilds it from the record (a new SDK server and transport, already initialized), shutdown
 * leaves records for the other instances, and DELETE on any instance removes the record. An
 * instance holding a copy of a session deleted elsewhere drops it the next time it is asked for
 * it (every request checks the record, which also refreshes its expiry), or within
 * `CLOUD_SESSION_CLEANUP_INTERVAL` while it holds one of its streams open (the same check keeps
 * the record of a session with a long-lived stream from expiring).
 *
 * Its event streams (the GET stream, a request's response) are kept as every event stream of the
 * gateway is (`keepEventStream`: a comment every `CLOUD_PING_INTERVAL`, a reader too far behind
 * cut off); a response closed before it was finished cancels the requests it carried ({@link HttpSession}).
 *
 * Caps: `MCP_HTTP_MAX_SESSIONS` sessions held by this instance (503 past it, to an `initialize`
 * or to a session that would be rebuilt here), `MCP_HTTP_MAX_SESSIONS_PER_PRINCIPAL` per token,
 * counted by the store (across instances with Redis; 429 past it).
 */
@Injectable()
export class McpHttpSessions implements OnModuleInit {
  private readonly storeFailures = new ThrottledWarning(new Logger('MCP'));
  private readonly sessions = new Map<string, HttpSession>();
  /** Sessions being started or rebuilt, counted against `MCP_HTTP_MAX_SESSIONS` before they are in {@link sessions}. */
  private reserved = 0;
  /** Rebuilds under way, so that concurrent requests for one session rebuild it once. */
  private readonly restoring = new Map<string, Promise<Rebuilt>>();
  private refresher?: NodeJS.Timeout;
  private readonly limits: EventStreamLimits;

  constructor(
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
    private readonly binder: Sdk1Binder,
    @Inject(MCP_HTTP_SESSION_STORE) private readonly store: McpHttpSessionStore,
    drain: DrainService,
  ) {
    drain.afterDrain('mcp_http', () => this.closeAll());
    this.limits = eventStreamLimits(config);
  }

  /** Sessions this instance holds now. */
  get size(): number {
    return this.sessions.size;
  }

  /**
   * With a shared store: checks once that a session can be rebuilt with the SDK installed (an SDK
   * whose internals moved stops the boot, not a client's request), and starts refreshing the
   * records of sessions whose streams stay open.
   */
  async onModuleInit(): Promise<void> {
    if (!this.store.shared || !this.config.mcp.enabled) return;
    await this.rebuildProbe();
    const { cleanupIntervalMs, timeoutMs } = this.config.session;
    this.refresher = setInterval(() => void this.refreshBusySessions(), Math.min(cleanupIntervalMs, timeoutMs / 2));
    this.refresher.unref();
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
    // The SDK drops such a message as unparsable (-32700); JSON-RPC's answer is -32600 with a null id.
    const idProblem = unrepresentableIdProblem(body);
    if (idProblem !== undefined) return reply(response, 400, ErrorCode.InvalidRequest, `Invalid Request: the message is ${idProblem}`);
    keepEventStream(response, this.limits);
    const principal = request.principal ?? ANONYMOUS_PRINCIPAL;
    const sessionId = request.headers['mcp-session-id'];
    if (sessionId !== undefined) return this.continueSession(sessionId, principal, request, response, body);
    if (request.method !== 'POST' || !isInitializeCall(body)) {
      return reply(response, 400, SERVER_ERROR, 'Bad Request: no Mcp-Session-Id; start a session with an initialize request');
    }
    const problem = initializeParamsProblem(body);
    if (problem !== undefined) {
      return reply(response, 400, ErrorCode.InvalidParams, `Invalid initialize params: ${problem}`, requestIdOf(body));
    }
    return this.startSession(principal, request, response, body as InitializeRequest);
  }

  /**
   * At shutdown, once the drain is over: closing a session ends its requests in flight
   * unanswered (and its streams), so not before the drain has seen their calls answered.
   */
  private async closeAll(): Promise<void> {
    clearInterval(this.refresher);
    await Promise.all([...this.sessions.values()].map((session) => session.close()));
  }

  private async startSession(principal: string, request: AuthenticatedRequest, response: ServerResponse, body: InitializeRequest): Promise<void> {
    const id = requestIdOf(body);
    if (this.full()) return this.refuseFull(response, id);
    const { protocolVersion, capabilities, clientInfo } = body.params;
    const now = Date.now();
    const record: McpHttpSessionRecord = {
      sessionId: newId(),
      principal,
      initialize: { protocolVersion, capabilities, clientInfo },
      createdAt: now,
      lastUsedAt: now,
    };
    const limit = this.config.mcp.http.maxSessionsPerPrincipal;
    let added: boolean;
    this.reserved += 1;
    try {
      added = await this.store.add(record, limit);
    } catch (error) {
      return this.refuseUnavailable(response, error, id);
    } finally {
      this.reserved -= 1;
    }
    if (!added) {
      response.setHeader('Retry-After', '1');
      const message = `Too many MCP sessions for this token: at most ${limit} (MCP_HTTP_MAX_SESSIONS_PER_PRINCIPAL); end one with DELETE or let it expire`;
      return reply(response, 429, SERVER_ERROR, message, id);
    }
    const session = this.track(record, ...this.serverAndTransport(record));
    session.hold(response);
    await session.handle(request, response, body);
    // An initialize the SDK refused leaves no session behind.
    if (!session.transport.sessionId) await this.end(session);
  }

  private async continueSession(
    sessionId: string | string[],
    principal: string,
    request: AuthenticatedRequest,
    response: ServerResponse,
    body: unknown,
  ): Promise<void> {
    if (typeof sessionId !== 'string' || !SESSION_ID.test(sessionId)) return refuseNotFound(response);
    const local = this.sessions.get(sessionId);
    if (local) {
      if (local.principal !== principal) return refuseNotFound(response);
      local.hold(response);
      if (!(await this.stillLive(local))) {
        await local.close();
        return refuseNotFound(response);
      }
      return local.handle(request, response, body);
    }
    if (!this.store.shared) return refuseNotFound(response);
    const rebuilt = await this.rebuild(sessionId, principal);
    if (rebuilt === 'not-found') return refuseNotFound(response);
    if (rebuilt === 'full') return this.refuseFull(response, null);
    if (rebuilt === 'unavailable') return this.refuseUnavailable(response, undefined, null);
    rebuilt.hold(response);
    return rebuilt.handle(request, response, body);
  }

  /** This instance's copy of a session known to the store, rebuilt once however many requests ask for it at once. */
  private rebuild(sessionId: string, principal: string): Promise<Rebuilt> {
    const underWay = this.restoring.get(sessionId);
    if (underWay) return underWay.then((session) => (session instanceof HttpSession && session.principal !== principal ? 'not-found' : session));
    if (this.full()) return Promise.resolve('full');
    this.reserved += 1;
    const rebuilding = this.rebuildFromRecord(sessionId, principal).finally(() => {
      this.reserved -= 1;
      this.restoring.delete(sessionId);
    });
    this.restoring.set(sessionId, rebuilding);
    return rebuilding;
  }

  private async rebuildFromRecord(sessionId: string, principal: string): Promise<Rebuilt> {
    let record: McpHttpSessionRecord | undefined;
    try {
      record = await this.store.claim(sessionId, principal);
    } catch (error) {
      this.reportStoreFailure(error, 'sessions cannot be started or taken over');
      return 'unavailable';
    }
    if (!record) return 'not-found';
    const [server, transport] = this.serverAndTransport(record);
    try {
      await restoreInitializedSession(transport, server, sessionId, record.initialize as InitializeRequest['params']);
    } catch (error) {
      await server.close();
      throw error;
    }
    const session = this.track(record, server, transport);
    // The client sent notifications/initialized to the instance that started the session.
    server.oninitialized?.();
    return session;
  }

  /**
   * A new SDK server and transport for the session; DELETE through the transport ends it
   * everywhere. The session is MCP's connection over HTTP: its tool calls are scoped to it, with
   * calls in flight of its own.
   */
  private serverAndTransport({ sessionId, principal }: McpHttpSessionRecord): [Server, StreamableHTTPServerTransport] {
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => sessionId,
      onsessionclosed: () => this.forget(sessionId, principal),
      // Its streams are kept alive by the gateway, every CLOUD_PING_INTERVAL (`keepEventStream`).
      keepAliveMs: 0,
    });
    const callsInFlight = new CallsInFlight(this.config.connections.maxCallsInFlight);
    const scope = ToolCallScope.ofConnection({ id: sessionId, protocol: MCP_PROTOCOL, principal, callsInFlight });
    return [this.binder.createServer(scope), transport];
  }

  /** Holds this instance's copy of a session in {@link sessions} until its transport closes. */
  private track({ sessionId, principal }: McpHttpSessionRecord, server: Server, transport: StreamableHTTPServerTransport): HttpSession {
    const session = new HttpSession(sessionId, principal, transport, server, this.config.session.timeoutMs, () => {
      this.sessions.delete(sessionId);
      this.store.released(sessionId, principal);
    });
    this.sessions.set(sessionId, session);
    return session;
  }

  /** Whether the session still exists for every instance (and marks it used); while the store fails, this copy is trusted. */
  private async stillLive(session: HttpSession): Promise<boolean> {
    if (!this.store.shared) return true;
    try {
      return await this.store.touch(session.sessionId, session.principal);
    } catch (error) {
      this.reportStoreFailure(error, 'sessions held here are served without checking their records');
      return true;
    }
  }

  /** Ends a session everywhere: its record, then this instance's copy. */
  private async end(session: HttpSession): Promise<void> {
    await this.forget(session.sessionId, session.principal);
    await session.close();
  }

  private async forget(sessionId: string, principal: string): Promise<void> {
    try {
      await this.store.remove(sessionId, principal);
    } catch (error) {
      this.reportStoreFailure(error, `the ended session ${sessionId} stays in the store until it expires`);
    }
  }

  /** Keeps the records of sessions with a stream open here from expiring, and drops those ended elsewhere. */
  private async refreshBusySessions(): Promise<void> {
    const busy = [...this.sessions.values()].filter((session) => session.busy);
    await Promise.all(
      busy.map(async (session) => {
        if (!(await this.stillLive(session))) await session.close();
      }),
    );
  }

  /** Rebuilds a throwaway session, so that an SDK this gateway cannot rebuild sessions with fails now. */
  private async rebuildProbe(): Promise<void> {
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => 'probe' });
    const server = this.binder.createServer(ToolCallScope.ofConnection({ id: 'probe', protocol: MCP_PROTOCOL }));
    try {
      await restoreInitializedSession(transport, server, 'probe', {
        protocolVersion: this.config.mcp.protocolVersion,
        capabilities: {},
        clientInfo: { name: 'probe', version: '0' },
      });
    } finally {
      await server.close();
      await transport.close();
    }
  }

  private full(): boolean {
    return this.sessions.size + this.reserved >= this.config.mcp.http.maxSessions;
  }

  private refuseFull(response: ServerResponse, id: string | number | null): void {
    const limit = this.config.mcp.http.maxSessions;
    response.setHeader('Retry-After', '1');
    reply(response, 503, SERVER_ERROR, `Too many MCP sessions on this instance: at most ${limit} (MCP_HTTP_MAX_SESSIONS); try again later`, id);
  }

  private refuseUnavailable(response: ServerResponse, error: unknown, id: string | number | null): void {
    if (error !== undefined) this.reportStoreFailure(error, 'sessions cannot be started or taken over');
    response.setHeader('Retry-After', '1');
    reply(response, 503, SERVER_ERROR, 'MCP session store unavailable; try again later', id);
  }

  private reportStoreFailure(error: unknown, consequence: string): void {
    this.storeFailures.warn(`MCP session store failed (${(error as Error).message}): ${consequence}`);
  }
}

/** Whether `body` is a JSON-RPC `initialize` request, its params right or wrong. */
function isInitializeCall(body: unknown): boolean {
  const message = body as { jsonrpc?: unknown; method?: unknown; id?: unknown } | null;
  return message?.jsonrpc === '2.0' && message.method === 'initialize' && requestIdOf(message) !== null;
}

function refuseNotFound(response: ServerResponse): void {
  reply(response, 404, SESSION_NOT_FOUND, 'Session not found: start a new one with an initialize request');
}

function reply(response: ServerResponse, status: number, code: number, message: string, id: string | number | null = null): void {
  response.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify(jsonRpcError(id, code, message)));
}
