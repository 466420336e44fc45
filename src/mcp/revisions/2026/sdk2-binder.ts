import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { LoggingLevel, McpError } from '@modelcontextprotocol/sdk/types.js';
import {
  createMcpHandler,
  LOG_LEVEL_META_KEY,
  McpHttpHandler,
  McpServer,
  ProtocolError,
  Server,
  ServerCapabilities as ModernCapabilities,
  ServerContext,
  Transport as ModernTransport,
} from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { Subscription } from 'rxjs';
import { GATEWAY_CONFIG, GatewayConfig } from '../../../config/gateway-config';
import { ANONYMOUS_PRINCIPAL } from '../../../core/auth/access-token.service';
import { withoutMcpErrorPrefix } from '../../../core/errors/mcp-error-words';
import { CallsInFlight } from '../../../core/limits/calls-in-flight';
import { newId } from '../../../core/new-id';
import type { ToolCaller } from '../../../core/tools/tool-definition';
import { ToolCallScope } from '../../../core/tools/tool-call-scope';
import { LogThreshold, progressAndLogs } from '../../methods/client-notifications';
import { McpMethod, McpMethodName, McpMethods, McpRequest } from '../../methods/mcp-methods';
import { McpTasks } from '../../methods/tasks/mcp-tasks.service';
import { MCP_PROTOCOL } from '../../mcp.constants';
import { withReadableErrors } from '../readable-errors';
import { MODERN_PROTOCOL_VERSION } from './request-meta';
import { acceptsTasks, TASKS_EXTENSION, TasksExtension } from './tasks-extension';
import { LocalWaitingCallRelay, RedisWaitingCallRelay, WaitingCallRelay } from './waiting-call-relay';
import { RoundCaller, WaitingCalls } from './waiting-calls';
import { GatewayState } from '../../../core/state/gateway-state';

/**
 * Methods of the table this revision does not have: a 2026 client has no session to keep a level
 * or a subscription in (it sends its log level with each request, and listens for list changes
 * with `subscriptions/listen`).
 */
const NOT_IN_THIS_REVISION: ReadonlySet<McpMethodName> = new Set(['logging/setLevel', 'resources/subscribe', 'resources/unsubscribe']);

/** A server of this revision, and how to let it go. */
export interface ServedConnection {
  close(): Promise<void>;
}

/**
 * The 2026-07-28 revision: the method table ({@link McpMethods}) bound to an
 * `@modelcontextprotocol/server` 2.x server, made for each HTTP request ({@link fetch}, the SDK's
 * `createMcpHandler`: no `initialize`, no session, every request carrying its protocol version,
 * capabilities and log level in `_meta`) or once for a connection that is not HTTP
 * ({@link serveConnection}, the SDK's `serveStdio` entry over any transport). The SDK does
 * `server/discover`, `subscriptions/listen`, the per-request checks and answers. What only this
 * revision has is here: a request whose upstream asks the client something answers
 * `input_required` and waits for the retry ({@link WaitingCalls}), and the Tasks extension
 * ({@link TasksExtension}).
 */
@Injectable()
export class Sdk2Binder implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('MCP');
  private readonly handler: McpHttpHandler;
  private readonly changes: Subscription;
  private relay!: WaitingCallRelay;
  private waitingCalls!: WaitingCalls;
  private readonly tasks: TasksExtension;
  /** The servers of connections ({@link serveConnection}), told of list changes as the handler's streams are. */
  private readonly connections = new Set<Server>();

  constructor(
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
    private readonly methods: McpMethods,
    tasks: McpTasks,
    private readonly state: GatewayState,
  ) {
    this.tasks = new TasksExtension(tasks);
    this.handler = createMcpHandler(({ authInfo }) => this.serverFor(String(authInfo?.extra?.principal ?? ANONYMOUS_PRINCIPAL)), {
      // The body arrives parsed, within the gateway's own body limit.
      legacy: 'reject',
      // The gateway's event streams keep themselves alive (`core/http/event-stream.ts`, CLOUD_PING_INTERVAL).
      keepAliveMs: 0,
      onerror: (error) => this.logger.debug(`MCP ${MODERN_PROTOCOL_VERSION}: ${error.message}`),
    });
    const { notify } = this.handler;
    const toEach = (send: (server: Server) => Promise<void>) => {
      for (const server of this.connections) send(server).catch(() => undefined);
    };
    this.changes = methods.changes.subscribe((kind) => {
      if (kind === 'tools') {
        notify.toolsChanged();
        toEach((server) => server.sendToolListChanged());
      } else if (kind === 'resources') {
        notify.resourcesChanged();
        toEach((server) => server.sendResourceListChanged());
      } else {
        notify.promptsChanged();
        toEach((server) => server.sendPromptListChanged());
      }
    });
  }

  /** With `REDIS_URL`, a call waiting for its client's answers is reached from every instance ({@link WaitingCallRelay}). */
  async onModuleInit(): Promise<void> {
    const local = () => new LocalWaitingCallRelay();
    this.relay = this.config.mcp.enabled
      ? await this.state.choose<WaitingCallRelay | Promise<WaitingCallRelay>>({ memory: local, redis: (redis) => RedisWaitingCallRelay.connect(redis) })
      : local();
    this.waitingCalls = new WaitingCalls(this.config.connections.maxCallsInFlight, this.relay);
  }

  /** Answers one HTTP request of this revision (its body read already), as `principal`; the request's signal is its client's. */
  fetch(request: Request, parsedBody: unknown, principal: string): Promise<Response> {
    return this.handler.fetch(request, { parsedBody, authInfo: { token: '', clientId: principal, scopes: [], extra: { principal } } });
  }

  /**
   * Serves the 2026 messages of one connection that is not HTTP (a WebSocket) with one server of
   * its own for the connection's life, as the SDK's stdio entry does over any transport
   * (`serveStdio`): the per-request HTTP handling (a Request, a server, a response stream per
   * message) would cost many times the call itself. `wire` carries the connection's 2026
   * messages both ways; `subscriptions/listen` is the entry's, at most `maxSubscriptions` open.
   */
  serveConnection(scope: ToolCallScope, wire: ModernTransport, maxSubscriptions: number): ServedConnection {
    const product = this.serverFor(scope.principal ?? ANONYMOUS_PRINCIPAL, scope);
    const { server } = product;
    this.connections.add(server);
    const entry = serveStdio(() => product, {
      transport: wire,
      legacy: 'reject',
      maxSubscriptions,
      onerror: (error) => this.logger.debug(`MCP ${MODERN_PROTOCOL_VERSION} over WebSocket: ${error.message}`),
    });
    return {
      close: async () => {
        this.connections.delete(server);
        await entry.close();
      },
    };
  }

  /** How many connections have a server of this revision of their own ({@link serveConnection}) now. */
  get socketServers(): number {
    return this.connections.size;
  }

  async onApplicationShutdown(): Promise<void> {
    this.changes.unsubscribe();
    await this.handler.close();
    await this.relay?.close();
  }

  /** The server of one request or connection: the table, narrowed to the caller's grant by the calls' scope. */
  private serverFor(principal: string, scope = ToolCallScope.ofConnection(this.requestOrigin(principal))): CatalogueServer {
    const { methods } = this;
    const servesContext = methods.servesContext;
    const capabilities = methods.capabilities(servesContext);
    // The same shapes in both SDKs' types; resources/subscribe is 2025's, a 2026 client listens instead.
    const modern = {
      ...capabilities,
      resources: capabilities.resources && { listChanged: true },
      extensions: { [TASKS_EXTENSION]: {} },
    } as ModernCapabilities;
    const product = new CatalogueServer(methods.info, { capabilities: modern, requestState: { verify: this.waitingCalls.verifyState } }, (name) =>
      methods.inputSchemaOf(name, principal),
    );
    const { server } = product;
    for (const [method, entry] of Object.entries(methods.table) as [McpMethodName, McpMethod][]) {
      if (NOT_IN_THIS_REVISION.has(method) || (entry.part === 'context' && !servesContext)) continue;
      const handle = (request: { params?: Record<string, unknown> }, context: ServerContext) =>
        inSdk2Words(() => this.answer(entry, request.params ?? {}, principal, scope, context));
      server.setRequestHandler(method as never, handle as never);
    }
    this.tasks.serve(server, principal);
    return product;
  }

  /**
   * One request as the table takes it: the request's signal, and a caller for its round. A method
   * whose upstream may ask the client something runs as a call that waits for the answers between
   * the client's requests ({@link WaitingCalls}); a retry (it carries the `requestState` the SDK
   * verified) resumes its call.
   */
  private answer(entry: McpMethod, params: Record<string, unknown>, principal: string, scope: ToolCallScope, context: ServerContext): Promise<unknown> {
    const task = acceptsTasks(context) ? this.tasks.offer(principal, context, params) : undefined;
    const requestOf = (caller: ToolCaller, signal: AbortSignal): McpRequest => ({ scope: scope.withSignal(signal), caller, task });
    if (!entry.asksAbout) return Promise.resolve(entry.answer(params, requestOf(roundCaller(context), context.mcpReq.signal)));
    const target = entry.asksAbout(params);
    if (context.mcpReq.requestState() !== undefined) return this.waitingCalls.resume(principal, target, context, roundCaller(context));
    return this.waitingCalls.start(principal, target, context, roundCaller(context), async (caller, signal) => entry.answer(params, requestOf(caller, signal)));
  }

  /** An HTTP request's stand-in for a connection: it is one, with calls in flight of its own. */
  private requestOrigin(principal: string) {
    return { id: newId(), protocol: MCP_PROTOCOL, principal, callsInFlight: new CallsInFlight(this.config.connections.maxCallsInFlight) };
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
 * The 2026 client of one round of a request: progress under the round's token, log messages at
 * or above the level its `_meta` asks for (none when it asks for none), in the round's own
 * response stream. Its questions are {@link WaitingCalls}' to ask.
 */
function roundCaller(context: ServerContext): RoundCaller {
  const { mcpReq } = context;
  const level = (mcpReq.envelope as Record<string, unknown> | undefined)?.[LOG_LEVEL_META_KEY];
  let threshold: LogThreshold | undefined;
  if (typeof level === 'string') {
    threshold = new LogThreshold();
    threshold.set(level as LoggingLevel);
  }
  return progressAndLogs((notification) => mcpReq.notify(notification as never).catch(() => undefined), mcpReq._meta?.progressToken, threshold);
}

/** The answer of `request`, an MCP error of SDK 1.x (the method table speaks it) made SDK 2.x's, so its code and words reach the client. */
async function inSdk2Words<T>(request: () => Promise<T>): Promise<T> {
  try {
    return await request();
  } catch (error) {
    if (error instanceof McpError) throw new ProtocolError(error.code, withoutMcpErrorPrefix(error.message), error.data);
    throw error;
  }
}
