import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { LoggingLevel, McpError, SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/sdk/types.js';
import {
  createMcpHandler,
  isLegacyRequest,
  LOG_LEVEL_META_KEY,
  McpHttpHandler,
  McpServer,
  PROTOCOL_VERSION_META_KEY,
  ProtocolError,
  Server,
  ServerCapabilities as ModernCapabilities,
  ServerContext,
  Tool as ModernTool,
  Transport as ModernTransport,
  UnsupportedProtocolVersionError,
} from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import type { Request as ExpressRequest, Response as ExpressResponse } from 'express';
import { Readable } from 'stream';
import type { ReadableStream as WebReadableStream } from 'stream/web';
import { filter, Subscription } from 'rxjs';
import { GATEWAY_CONFIG, GatewayConfig } from '../../config/gateway-config';
import { ANONYMOUS_PRINCIPAL } from '../../core/auth/access-token.service';
import { ContextCatalogueService } from '../../core/context/context-catalogue.service';
import { CallsInFlight } from '../../core/limits/calls-in-flight';
import { withoutMcpErrorPrefix } from '../../core/errors/mcp-error-words';
import { newId } from '../../core/new-id';
import type { ToolCaller } from '../../core/tools/tool-definition';
import { ToolCallScope } from '../../core/tools/tool-call-scope';
import { ToolRegistryService } from '../../core/tools/tool-registry.service';
import { MCP_PROTOCOL } from '../mcp.constants';
import { CONTEXT_METHODS, McpService } from '../mcp.service';
import { SessionLogLevel } from '../mcp-tool-caller';
import { withReadableErrors } from '../readable-errors';
import { McpTasks } from '../tasks/mcp-tasks.service';
import { acceptsTasks, ModernTasks, TASKS_EXTENSION } from './modern-tasks';
import { LocalWaitingCallRelay, RedisWaitingCallRelay, WaitingCallRelay } from './waiting-call-relay';
import { RoundCaller, WaitingCalls } from './waiting-calls';

/** The revision this endpoint serves; the sessionful endpoint serves the 2025 ones. */
const MODERN_PROTOCOL_VERSION = '2026-07-28';

/**
 * MCP's 2026-07-28 revision on `/mcp`, beside the sessionful 2025 revisions: no `initialize` and
 * no session, each POST carries its protocol version, capabilities and log level in `_meta`, and
 * `server/discover`, `subscriptions/listen` and the per-request answers are the official SDK 2.x's
 * (`createMcpHandler`). Each request gets a server of its own over the same catalogue as every
 * other session, narrowed to the caller's grant; list changes reach open `subscriptions/listen`
 * streams. Requests that carry no 2026 envelope are left to the 2025 endpoint ({@link claims}).
 *
 * A WebSocket connection's 2026 messages are served by a server of its own ({@link serveConnection}).
 *
 * A tool's questions (an upstream's elicitation or sampling) reach a 2026 client as `input_required`
 * results, and its retry answers them: the call waits in between ({@link WaitingCalls}).
 */
@Injectable()
export class ModernMcpEndpoint implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('MCP');
  private readonly handler: McpHttpHandler;
  private readonly changes: Subscription;
  private relay!: WaitingCallRelay;
  private waitingCalls!: WaitingCalls;
  private readonly tasks: ModernTasks;
  /** The servers of connections served by {@link serveConnection}, told of list changes as the handler's streams are. */
  private readonly pinned = new Set<Server>();

  constructor(
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
    private readonly mcp: McpService,
    registry: ToolRegistryService,
    catalogue: ContextCatalogueService,
    tasks: McpTasks,
  ) {
    this.tasks = new ModernTasks(tasks);
    this.handler = createMcpHandler(({ authInfo }) => this.serverFor(String(authInfo?.extra?.principal ?? ANONYMOUS_PRINCIPAL)), {
      // The body arrives parsed, within the gateway's own body limit.
      legacy: 'reject',
      onerror: (error) => this.logger.debug(`MCP ${MODERN_PROTOCOL_VERSION}: ${error.message}`),
    });
    const { notify } = this.handler;
    const toEach = (send: (server: Server) => Promise<void>) => {
      for (const server of this.pinned) send(server).catch(() => undefined);
    };
    this.changes = registry.changes.pipe(filter((change) => change.connectionId === undefined)).subscribe(() => {
      notify.toolsChanged();
      toEach((server) => server.sendToolListChanged());
    });
    this.changes.add(
      catalogue.changes.subscribe((kind) => {
        if (kind === 'resources') {
          notify.resourcesChanged();
          toEach((server) => server.sendResourceListChanged());
        } else {
          notify.promptsChanged();
          toEach((server) => server.sendPromptListChanged());
        }
      }),
    );
  }

  /** With `REDIS_URL`, a call waiting for its client's answers is reached from every instance ({@link WaitingCallRelay}). */
  async onModuleInit(): Promise<void> {
    const { redisUrl, redisKeyPrefix } = this.config.session;
    this.relay = redisUrl && this.config.mcp.enabled ? await RedisWaitingCallRelay.connect(redisUrl, redisKeyPrefix) : new LocalWaitingCallRelay();
    this.waitingCalls = new WaitingCalls(this.config.connections.maxCallsInFlight, this.relay);
  }

  /**
   * Whether `request` is the 2026 revision's to answer: it names a revision the 2025 sessions do
   * not speak, or carries the revision's `_meta` envelope, and the SDK classifies it modern. Other
   * requests are the sessions' to answer, with their own checks (an unreadable id, a bad body).
   */
  async claims(request: ExpressRequest): Promise<boolean> {
    if (request.method !== 'POST' || !namesModernRevision(request)) return false;
    return !(await isLegacyRequest(webRequestOf(request), request.body));
  }

  /** Answers one 2026 request, as the principal the guards authenticated. */
  async serve(request: ExpressRequest & { principal?: string }, response: ExpressResponse): Promise<void> {
    const principal = request.principal ?? ANONYMOUS_PRINCIPAL;
    const aborted = new AbortController();
    response.once('close', () => aborted.abort());
    const answer = await this.handler.fetch(webRequestOf(request, aborted.signal), { parsedBody: request.body, authInfo: authInfoOf(principal) });
    response.status(answer.status);
    answer.headers.forEach((value, name) => response.setHeader(name, value));
    if (!answer.body) {
      response.end();
      return;
    }
    Readable.fromWeb(answer.body as WebReadableStream).pipe(response);
  }

  /**
   * Serves the 2026 messages of one connection that is not HTTP (a WebSocket) with one server of
   * its own for the connection's life, as the SDK's stdio entry does over any transport
   * (`serveStdio`): the per-request HTTP handling (a Request, a server, a response stream per
   * message) would cost many times the call itself. `wire` carries the connection's 2026
   * messages both ways; `subscriptions/listen` is the entry's, at most `maxSubscriptions` open.
   */
  serveConnection(scope: ToolCallScope, wire: ModernTransport, maxSubscriptions: number): { close(): Promise<void> } {
    const product = this.serverFor(scope.principal ?? ANONYMOUS_PRINCIPAL, scope);
    const { server } = product;
    this.pinned.add(server);
    const entry = serveStdio(() => product, {
      transport: wire,
      legacy: 'reject',
      maxSubscriptions,
      onerror: (error) => this.logger.debug(`MCP ${MODERN_PROTOCOL_VERSION} over WebSocket: ${error.message}`),
    });
    return {
      close: async () => {
        this.pinned.delete(server);
        await entry.close();
      },
    };
  }

  /** How many WebSocket connections have a 2026 server of their own ({@link serveConnection}) now. */
  get socketServers(): number {
    return this.pinned.size;
  }

  async onApplicationShutdown(): Promise<void> {
    this.changes.unsubscribe();
    await this.handler.close();
    await this.relay?.close();
  }

  /** The server of one request: the gateway's tools, and the upstreams' resources and prompts when it has upstreams. */
  private serverFor(principal: string, scope = ToolCallScope.ofConnection(this.requestOrigin(principal))): CatalogueServer {
    const servesContext = this.mcp.servesContext;
    const capabilities = this.mcp.capabilities(servesContext);
    // The same shapes in both SDKs' types; resources/subscribe is 2025's, a 2026 client listens instead.
    const modern = {
      ...capabilities,
      resources: capabilities.resources && { listChanged: true },
      extensions: { [TASKS_EXTENSION]: {} },
    } as ModernCapabilities;
    const product = new CatalogueServer(this.mcp.info, { capabilities: modern, requestState: { verify: this.waitingCalls.verifyState } }, (name) =>
      this.mcp.inputSchemaOf(name, principal),
    );
    const { server } = product;
    server.setRequestHandler('tools/list', () => ({ tools: this.mcp.listTools(scope) as ModernTool[] }));
    server.setRequestHandler(
      'tools/call',
      (request, context) =>
        inSdk2Words<unknown>(() => {
          const { params } = request;
          if (context.mcpReq.requestState() !== undefined) return this.waitingCalls.resume(principal, params.name, context, roundCaller(context));
          if (acceptsTasks(context) && this.mcp.runsAsTask(params.name, principal)) {
            return this.tasks.start(principal, context, params, (signal, caller) => this.mcp.call(params, scope.withSignal(signal), { caller }));
          }
          return this.waitingCalls.start(principal, params.name, context, roundCaller(context), (caller, signal) =>
            this.mcp.call(params, scope.withSignal(signal), { caller }),
          );
        }) as never,
    );
    this.tasks.serve(server, principal);
    if (servesContext) this.serveContext(server, principal);
    return product;
  }

  /** An HTTP request's stand-in for a connection: it is one, with calls in flight of its own. */
  private requestOrigin(principal: string) {
    return { id: newId(), protocol: MCP_PROTOCOL, principal, callsInFlight: new CallsInFlight(this.config.connections.maxCallsInFlight) };
  }

  /**
   * The upstreams' context, as every MCP session serves it ({@link McpService.answerContext}); a
   * prompt or a resource read whose upstream asks the client something waits for the answers as
   * a tool call does.
   */
  private serveContext(server: Server, principal: string): void {
    for (const method of CONTEXT_METHODS) {
      server.setRequestHandler(
        method,
        (request, context) =>
          inSdk2Words<unknown>(() => {
            const { params } = request;
            const answer = (caller: ToolCaller, signal: AbortSignal) => this.mcp.answerContext(method, params, principal, signal, caller);
            if (method !== 'prompts/get' && method !== 'resources/read') return answer(roundCaller(context), context.mcpReq.signal);
            const { name, uri } = params as { name?: string; uri?: string };
            const target = String(name ?? uri);
            if (context.mcpReq.requestState() !== undefined) return this.waitingCalls.resume(principal, target, context, roundCaller(context));
            return this.waitingCalls.start(principal, target, context, roundCaller(context), answer);
          }) as never,
      );
    }
  }
}

/**
 * The server of one 2026 request or connection: an `McpServer` whose tools are the catalogue's
 * (its low-level `server` answers them) rather than registered with it. The SDK's HTTP entry
 * checks a `tools/call`'s `Mcp-Param-*` headers against the tool's `x-mcp-header` declarations
 * before dispatch (SEP-2243) only for an `McpServer`, by this method.
 */
class CatalogueServer extends McpServer {
  constructor(
    info: ConstructorParameters<typeof McpServer>[0],
    options: ConstructorParameters<typeof McpServer>[1],
    private readonly inputSchemaOf: (name: string) => Record<string, unknown> | undefined,
  ) {
    super(info, options);
  }

  override toolInputSchemaJson(name: string): Record<string, unknown> | undefined {
    return this.inputSchemaOf(name);
  }

  /** Every transport of a request or a connection: its errors read as sentences (the SDK sends zod's dump for a request it refuses). */
  override connect(transport: ModernTransport): Promise<void> {
    return super.connect(withReadableErrors(transport));
  }
}

/**
 * The 2026 client of one round of a `tools/call`: progress under the round's token, log messages
 * at or above the level its `_meta` asks for (none when it asks for none), in the round's own
 * response stream. Its questions are {@link WaitingCalls}' to ask.
 */
function roundCaller(context: ServerContext): RoundCaller {
  const { mcpReq } = context;
  const progressToken = mcpReq._meta?.progressToken;
  const level = (mcpReq.envelope as Record<string, unknown> | undefined)?.[LOG_LEVEL_META_KEY];
  const notify = (method: string, params: Record<string, unknown>) => mcpReq.notify({ method, params } as never).catch(() => undefined);
  const threshold = new SessionLogLevel();
  if (typeof level === 'string') threshold.set(level as LoggingLevel);
  return {
    ...(progressToken !== undefined && { progress: (update) => notify('notifications/progress', { ...update, progressToken }) }),
    ...(typeof level === 'string' && {
      log: async (message) => {
        if (threshold.admits(message.level)) await notify('notifications/message', message);
      },
    }),
  };
}

/** Who the guards authenticated, as the SDK hands it to the server factory. */
function authInfoOf(principal: string) {
  return { token: '', clientId: principal, scopes: [], extra: { principal } };
}

/** The answer of `request`, an MCP error of SDK 1.x (the gateway's core speaks it) made SDK 2.x's, so its code and words reach the client. */
async function inSdk2Words<T>(request: () => Promise<T>): Promise<T> {
  try {
    return await request();
  } catch (error) {
    if (error instanceof McpError) throw new ProtocolError(error.code, withoutMcpErrorPrefix(error.message), error.data);
    throw error;
  }
}

/**
 * Why a message that carries the 2026 envelope cannot be served, in the SDK's words
 * (`-32022`, with the revisions served), when it names another revision; `undefined` when it
 * names this one. The HTTP handler checks every request; a connection's server checks only its
 * first, so its connection checks the rest ({@link ModernMcpEndpoint.serveConnection}).
 */
export function unsupportedRevisionOf(envelope: Record<string, unknown>): UnsupportedProtocolVersionError | undefined {
  const requested = envelope[PROTOCOL_VERSION_META_KEY];
  if (requested === MODERN_PROTOCOL_VERSION) return undefined;
  return new UnsupportedProtocolVersionError({ supported: [MODERN_PROTOCOL_VERSION], requested: String(requested) });
}

/** The `_meta` of a message that carries the 2026 envelope (its protocol version key), else `undefined`. */
export function modernEnvelopeOf(message: unknown): Record<string, unknown> | undefined {
  const meta = (message as { params?: { _meta?: unknown } } | null)?.params?._meta;
  return meta !== null && typeof meta === 'object' && PROTOCOL_VERSION_META_KEY in meta ? (meta as Record<string, unknown>) : undefined;
}

/** A protocol version header the 2025 sessions do not speak, or the 2026 envelope in a message. */
function namesModernRevision(request: ExpressRequest): boolean {
  const header = request.headers['mcp-protocol-version'];
  if (typeof header === 'string' && !SUPPORTED_PROTOCOL_VERSIONS.includes(header)) return true;
  const messages: unknown[] = Array.isArray(request.body) ? request.body : [request.body];
  return messages.some((message) => modernEnvelopeOf(message) !== undefined);
}

/** The Fetch API's view of an Express request whose body Express has read already (it goes to the SDK as `parsedBody`). */
function webRequestOf(request: ExpressRequest, signal?: AbortSignal): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(request.headers)) {
    if (value === undefined) continue;
    for (const each of Array.isArray(value) ? value : [value]) headers.append(name, each);
  }
  return new Request(`http://${request.headers.host ?? 'localhost'}${request.originalUrl}`, { method: request.method, headers, signal });
}
