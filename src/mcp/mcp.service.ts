import { Inject, Injectable, Logger } from '@nestjs/common';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv-provider.js';
import {
  CallToolResult,
  CallToolRequest,
  CallToolRequestSchema,
  CompleteRequest,
  CompleteRequestSchema,
  ErrorCode,
  GetPromptRequestSchema,
  Implementation,
  InitializeRequest,
  InitializeResult,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  ServerCapabilities,
  SetLevelRequestSchema,
  RequestSchema,
  SUPPORTED_PROTOCOL_VERSIONS,
  Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { filter, Subscription } from 'rxjs';
import { GATEWAY_CONFIG, GatewayConfig } from '../config/gateway-config';
import { ANONYMOUS_PRINCIPAL } from '../core/auth/access-token.service';
import { isPromise, MaybePromise, thenMaybe } from '../core/maybe-promise';
import { ToolCallService } from '../core/tools/tool-call.service';
import type { ToolCallScope } from '../core/tools/tool-call-scope';
import type { ToolCaller, ToolDefinition } from '../core/tools/tool-definition';
import type { ToolCallControls } from '../core/tools/tool-invoker';
import { ToolRegistryService } from '../core/tools/tool-registry.service';
import { ContextCatalogueService } from '../core/context/context-catalogue.service';
import { runInTraceContext, traceContextOf } from '../core/tracing/trace-context';
import { GATEWAY_VERSION } from '../core/version';
import { checkedInitialize, checkedListTools, InitializeWithAnyParams, ListToolsWithAnyParams } from './request-params';
import { limitAsMcpError } from './mcp.errors';
import { mcpTaskCaller, mcpToolCaller, SessionLogLevel } from './mcp-tool-caller';
import { ResourceSubscriptions } from './resource-subscriptions';
import { answeredAsMcp } from './context-errors';
import { McpTasks } from './tasks/mcp-tasks.service';
import { toCallToolResult, toMcpTool } from './mcp.mapper';
import { withReadableErrors } from './readable-errors';

/** The requests for the upstreams' context, by method, with the schema the SDK 1.x server parses each with. */
const CONTEXT_REQUESTS = {
  'resources/list': ListResourcesRequestSchema,
  'resources/templates/list': ListResourceTemplatesRequestSchema,
  'resources/read': ReadResourceRequestSchema,
  'prompts/list': ListPromptsRequestSchema,
  'prompts/get': GetPromptRequestSchema,
  'completion/complete': CompleteRequestSchema,
} as const;

/** A request for the upstreams' context (see {@link McpService.answerContext}). */
export type ContextMethod = keyof typeof CONTEXT_REQUESTS;

/** Every method of {@link CONTEXT_REQUESTS}, for servers that register handlers by method. */
export const CONTEXT_METHODS = Object.keys(CONTEXT_REQUESTS) as ContextMethod[];

/** MCP tasks as the gateway serves them: `tools/call` as a task, `tasks/list` and `tasks/cancel` (revision 2025-11-25). */
const TASKS_CAPABILITY = { list: {}, cancel: {}, requests: { tools: { call: {} } } };

/**
 * `tools/call` with any params. The SDK parses a request against the handler's schema before its
 * own `tools/call` check runs, and reports a failed parse as -32603; with loose params here, that
 * check answers a malformed call with -32602 "Invalid params", as JSON-RPC says.
 */
const ToolsCallWithAnyParams = CallToolRequestSchema.extend({ params: RequestSchema.shape.params });

/**
 * The SDK 1.x server of a 2025 session, whose errors read as sentences on every transport it is
 * connected to: the SDK answers a request its schemas refuse with zod's multi-line dump.
 */
class ReadableErrorsServer extends Server {
  override connect(transport: Transport): Promise<void> {
    return super.connect(withReadableErrors(transport));
  }
}

/**
 * Makes one SDK `Server` per MCP session (a WebSocket connection or a Streamable HTTP session),
 * serving the live catalogue: `tools/list` lists the shared tools as they are now, `tools/call`
 * runs them through the catalogue (validated, time-limited, never throwing), and every change
 * to the shared tools is announced with `notifications/tools/list_changed` once the client has
 * initialized. Client tools belong to LLM-gateway connections and are not served here.
 * Initialize, capabilities, ping and JSON-RPC errors are the SDK's.
 */
@Injectable()
export class McpService {
  private readonly logger = new Logger('MCP');
  private readonly serverInfo: Implementation;
  /** The SDK's validator (for elicitation answers) holds an ajv instance; one serves every session. */
  private readonly validator = new AjvJsonSchemaValidator();

  constructor(
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
    private readonly registry: ToolRegistryService,
    private readonly toolCalls: ToolCallService,
    private readonly contextCatalogue: ContextCatalogueService,
    private readonly tasks: McpTasks,
  ) {
    this.serverInfo = { name: config.mcp.serverName, version: GATEWAY_VERSION };
  }

  /** The name and version the gateway announces as an MCP server. */
  get info(): Implementation {
    return this.serverInfo;
  }

  /**
   * The SDK server of one session (a WebSocket connection, a Streamable HTTP session), whose calls
   * run within `scope`; `view`, when given, is the part of the catalogue it serves, under its own
   * names (one device's tools, unprefixed).
   */
  createServer(scope: ToolCallScope, view?: McpToolView): Server {
    const servesContext = !view && this.servesContext;
    const server = new ReadableErrorsServer(this.serverInfo, {
      capabilities: { ...this.capabilities(servesContext), ...(!view && { tasks: TASKS_CAPABILITY }) },
      ...(!view && { taskStore: this.tasks.ownedBy(scope.principal ?? ANONYMOUS_PRINCIPAL) }),
      debouncedNotificationMethods: ['notifications/tools/list_changed', 'notifications/resources/list_changed', 'notifications/prompts/list_changed'],
      jsonSchemaValidator: this.validator,
    });
    preferProtocolVersion(server, this.config.mcp.protocolVersion);
    server.setRequestHandler(ListToolsWithAnyParams, (request) => {
      checkedListTools(request);
      return { tools: view ? view.list().map(toMcpTool) : this.listTools(scope) };
    });
    const logLevel = new SessionLogLevel();
    server.setRequestHandler(ToolsCallWithAnyParams, (request, extra) => {
      // The SDK has checked the params against CallToolRequestSchema by now (see ToolsCallWithAnyParams).
      const params = (request as CallToolRequest).params;
      const name = view ? view.catalogueName(params.name) : params.name;
      if (name === undefined) throw new McpError(ErrorCode.InvalidParams, `Unknown tool "${params.name}"`);
      // A task outlives its request: the session is its caller, and its own stop (tasks/cancel) replaces the request's.
      if (params.task && extra.taskStore) {
        if (!this.runsAsTask(name, scope.principal)) {
          throw new McpError(ErrorCode.MethodNotFound, `Tool "${params.name}" does not run as a task (its execution.taskSupport is not "optional")`);
        }
        const progressToken = extra._meta?.progressToken;
        return this.tasks.start(extra.taskStore, params.task.ttl, (signal, { taskId }) =>
          this.call({ ...params, name }, scope.withSignal(signal), { caller: mcpTaskCaller(server, taskId, progressToken, logLevel, signal) }, params.name),
        );
      }
      return this.call({ ...params, name }, scope.withSignal(extra.signal), { caller: mcpToolCaller(server, extra, logLevel) }, params.name);
    });
    let subscriptions: ResourceSubscriptions | undefined;
    if (servesContext) {
      this.serveContext(server, scope, logLevel);
      subscriptions = new ResourceSubscriptions(server, scope.principal, this.contextCatalogue);
      server.setRequestHandler(SetLevelRequestSchema, (request) => {
        logLevel.set(request.params.level);
        return {};
      });
    }
    server.onerror = (error) => this.logger.warn(`MCP session ${scope.connectionId}: ${error.message}`);

    let announcements: Subscription | undefined;
    server.oninitialized = () => {
      announcements ??= this.registry.changes
        .pipe(filter((change) => change.connectionId === undefined))
        .subscribe(() => server.sendToolListChanged().catch(() => undefined));
      if (servesContext) {
        announcements.add(
          this.contextCatalogue.changes.subscribe((kind) =>
            (kind === 'resources' ? server.sendResourceListChanged() : server.sendPromptListChanged()).catch(() => undefined),
          ),
        );
      }
    };
    server.onclose = () => {
      announcements?.unsubscribe();
      subscriptions?.close();
    };
    return server;
  }

  /** Whether sessions serve the upstreams' resources, prompts, completions and logging: when `MCP_SERVERS_FILE` is set. */
  get servesContext(): boolean {
    return this.config.mcp.upstream.serversFile !== undefined;
  }

  /** What the gateway announces it serves, to clients of every revision. */
  capabilities(servesContext: boolean): ServerCapabilities {
    if (!servesContext) return { tools: { listChanged: true } };
    return { tools: { listChanged: true }, resources: { listChanged: true, subscribe: true }, prompts: { listChanged: true }, completions: {}, logging: {} };
  }

  /** The shared tools `scope`'s principal may use, as MCP lists them. */
  listTools(scope: ToolCallScope): Tool[] {
    return this.registry.list(undefined, scope.principal, 'agent').map(toMcpTool);
  }

  /** The input schema of the tool `name` as `tools/list` shows it to `principal`; `undefined` when it sees no such tool. */
  inputSchemaOf(name: string, principal: string): Tool['inputSchema'] | undefined {
    const tool = this.registry.get(name, undefined, principal, 'agent');
    return tool && toMcpTool(tool).inputSchema;
  }

  /**
   * Resources, resource templates, prompts and completions of the upstream MCP servers (served
   * when `MCP_SERVERS_FILE` is set, to every session but a device's own server).
   */
  private serveContext(server: Server, scope: ToolCallScope, logLevel: SessionLogLevel): void {
    for (const [method, schema] of Object.entries(CONTEXT_REQUESTS) as [ContextMethod, (typeof CONTEXT_REQUESTS)[ContextMethod]][]) {
      server.setRequestHandler(
        schema,
        (request, extra) => this.answerContext(method, request.params, scope.principal, extra.signal, mcpToolCaller(server, extra, logLevel)) as never,
      );
    }
  }

  /**
   * One request for the upstreams' context as MCP answers it, whatever the revision: what the
   * caller's grant lets it see (see {@link ContextCatalogueService}), the request sent upstream
   * with the caller's cancellation, its refusals in MCP's words.
   */
  answerContext(
    method: ContextMethod,
    params: unknown,
    principal: string | undefined,
    signal: AbortSignal,
    caller?: ToolCaller,
  ): Promise<Record<string, unknown>> {
    const catalogue = this.contextCatalogue;
    const options = { signal, caller };
    const request = params as { uri: string; name: string; arguments?: Record<string, string> };
    switch (method) {
      case 'resources/list':
        return Promise.resolve({ resources: catalogue.listResources(principal) });
      case 'resources/templates/list':
        return Promise.resolve({ resourceTemplates: catalogue.listResourceTemplates(principal) });
      case 'prompts/list':
        return Promise.resolve({ prompts: catalogue.listPrompts(principal) });
      case 'resources/read':
        return answeredAsMcp(() => catalogue.readResource(principal, request.uri, options));
      case 'prompts/get':
        return answeredAsMcp(() => catalogue.getPrompt(principal, request.name, request.arguments, options));
      case 'completion/complete':
        return answeredAsMcp(() => catalogue.complete(principal, params as CompleteRequest['params'], options));
    }
  }

  /**
   * A `tools/call` of `name` within `scope` as MCP answers it, at once when the tool answers at
   * once; `undefined` when the catalogue has no such tool for the caller (MCP's answer is then a
   * protocol error), or when `takes` leaves the tool to another path. A call over the caller's
   * rate limit, or over its connection's calls in flight, throws (or rejects with) an
   * {@link McpError} -32029.
   */
  toolCallResult(
    scope: ToolCallScope,
    name: string,
    args: Record<string, unknown>,
    controls?: ToolCallControls,
    takes?: (tool: ToolDefinition) => boolean,
  ): MaybePromise<CallToolResult> | undefined {
    const prepared = this.toolCalls.prepare(scope, name, args);
    const tool = prepared.entry?.tool;
    if (!tool || (takes && !takes(tool))) return undefined;
    let result: MaybePromise<CallToolResult>;
    try {
      result = thenMaybe(this.toolCalls.run(scope, prepared, controls), (outcome) => toCallToolResult(tool, outcome));
    } catch (error) {
      throw limitAsMcpError(error);
    }
    return isPromise(result) ? result.catch((error: unknown) => Promise.reject(limitAsMcpError(error))) : result;
  }

  /** Whether the tool `name` may run as a task for `principal`: it is one of the long ones (`execution.taskSupport: "optional"`). */
  runsAsTask(name: string, principal: string | undefined): boolean {
    return this.registry.get(name, undefined, principal, 'agent')?.longRunning === true;
  }

  /** A `tools/call` as MCP answers it, within `scope`; `asNamed` is the name the client used (a device server's view renames its tools). */
  async call(params: CallToolRequest['params'], scope: ToolCallScope, controls: ToolCallControls, asNamed = params.name): Promise<CallToolResult> {
    // A client's trace context in `params._meta` (MCP's place for it) is the call's parent, over any the transport carried.
    const result = runInTraceContext(traceContextOf(params._meta), () => this.toolCallResult(scope, params.name, params.arguments ?? {}, controls));
    // MCP reports an unknown tool as a protocol error, not as a failed call.
    if (!result) throw new McpError(ErrorCode.InvalidParams, `Unknown tool "${asNamed}"`);
    return result;
  }
}

/** A part of the catalogue an MCP server serves under names of its own (see `DeviceMcpController`). */
export interface McpToolView {
  /** The tools, as this server names them. */
  list(): ToolDefinition[];
  /** The catalogue's name of the tool this server calls `name`; `undefined` for none. */
  catalogueName(name: string): string | undefined;
}

/**
 * The SDK answers `initialize` with the client's protocol version when it supports it, and with
 * its own latest otherwise. The first rule stays; for the second the gateway answers its
 * configured `MCP_PROTOCOL_VERSION` (MCP lets a server pick any version it supports). The SDK
 * has no option for this, so its own handler (`_oninitialize`, SDK 1.32.2, pinned) still does
 * the work, client capabilities and server info included; only the version is chosen here.
 */
function preferProtocolVersion(server: Server, preferred: string): void {
  const sdk = server as unknown as { _oninitialize(request: InitializeRequest): Promise<InitializeResult> };
  server.setRequestHandler(InitializeWithAnyParams, async (loose) => {
    const request = checkedInitialize(loose);
    const result = await sdk._oninitialize(request);
    return SUPPORTED_PROTOCOL_VERSIONS.includes(request.params.protocolVersion) ? result : { ...result, protocolVersion: preferred };
  });
}
