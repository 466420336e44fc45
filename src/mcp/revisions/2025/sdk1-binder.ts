import { Inject, Injectable, Logger } from '@nestjs/common';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv-provider.js';
import {
  CallToolRequestSchema,
  CompleteRequestSchema,
  GetPromptRequestSchema,
  InitializeRequest,
  InitializeResult,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ReadResourceRequestSchema,
  RequestSchema,
  ServerNotification,
  ServerRequest,
  SetLevelRequestSchema,
  SubscribeRequestSchema,
  SUPPORTED_PROTOCOL_VERSIONS,
  UnsubscribeRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { Subscription } from 'rxjs';
import { GATEWAY_CONFIG, GatewayConfig } from '../../../config/gateway-config';
import { ANONYMOUS_PRINCIPAL } from '../../../core/auth/access-token.service';
import { ContextCatalogueService } from '../../../core/context/context-catalogue.service';
import type { ToolCallScope } from '../../../core/tools/tool-call-scope';
import { LogThreshold } from '../../methods/client-notifications';
import { McpMethod, McpMethodName, McpMethods, McpRequest, McpSessionState, McpToolView, TASKS_CAPABILITY, TaskOffer } from '../../methods/mcp-methods';
import { ResourceSubscriptions } from '../../methods/resource-subscriptions';
import { McpTasks } from '../../methods/tasks/mcp-tasks.service';
import { withReadableErrors } from '../readable-errors';
import { sessionCaller, taskCaller } from './callers';
import { checkedInitialize, checkedListTools, InitializeWithAnyParams, ListToolsWithAnyParams } from './request-params';

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/**
 * `tools/call` with any params. The SDK parses a request against the handler's schema before its
 * own `tools/call` check runs, and reports a failed parse as -32603; with loose params here, that
 * check answers a malformed call with -32602 "Invalid params", as JSON-RPC says.
 */
const ToolsCallWithAnyParams = CallToolRequestSchema.extend({ params: RequestSchema.shape.params });

/** The schema SDK 1.x parses each method of the table with, and a check of its own where the SDK's answer to bad params is not JSON-RPC's. */
const SDK1_REQUESTS: Record<McpMethodName, { schema: unknown; check?: (request: unknown) => unknown }> = {
  'tools/list': { schema: ListToolsWithAnyParams, check: checkedListTools },
  'tools/call': { schema: ToolsCallWithAnyParams },
  'resources/list': { schema: ListResourcesRequestSchema },
  'resources/templates/list': { schema: ListResourceTemplatesRequestSchema },
  'resources/read': { schema: ReadResourceRequestSchema },
  'resources/subscribe': { schema: SubscribeRequestSchema },
  'resources/unsubscribe': { schema: UnsubscribeRequestSchema },
  'prompts/list': { schema: ListPromptsRequestSchema },
  'prompts/get': { schema: GetPromptRequestSchema },
  'completion/complete': { schema: CompleteRequestSchema },
  'logging/setLevel': { schema: SetLevelRequestSchema },
};

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
 * The 2025 revisions (up to 2025-11-25): the method table ({@link McpMethods}) bound to an
 * `@modelcontextprotocol/sdk` 1.x `Server`, one per session (a WebSocket connection, a Streamable
 * HTTP session, a device's stateless request). The SDK does `initialize`, capabilities, `ping`,
 * the JSON-RPC errors and, from the store it is given, `tasks/get`, `tasks/result`, `tasks/list`
 * and `tasks/cancel`. What only these revisions have is here: the session (its log level, its
 * resource subscriptions), questions asked by a request of the server's own, the list changes
 * announced once the client has initialized, tasks asked for with `task` in the params.
 */
@Injectable()
export class Sdk1Binder {
  private readonly logger = new Logger('MCP');
  /** The SDK's validator (for elicitation answers) holds an ajv instance; one serves every session. */
  private readonly validator = new AjvJsonSchemaValidator();

  constructor(
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
    private readonly methods: McpMethods,
    private readonly context: ContextCatalogueService,
    private readonly tasks: McpTasks,
  ) {}

  /**
   * The server of one session, whose calls run within `scope`; `view`, when given, is the part of
   * the catalogue it serves, under its own names (one device's tools, unprefixed: no context, no tasks).
   */
  createServer(scope: ToolCallScope, view?: McpToolView): Server {
    const { methods } = this;
    const servesContext = !view && methods.servesContext;
    const server = new ReadableErrorsServer(methods.info, {
      capabilities: { ...methods.capabilities(servesContext), ...(!view && { tasks: TASKS_CAPABILITY }) },
      ...(!view && { taskStore: this.tasks.ownedBy(scope.principal ?? ANONYMOUS_PRINCIPAL) }),
      debouncedNotificationMethods: ['notifications/tools/list_changed', 'notifications/resources/list_changed', 'notifications/prompts/list_changed'],
      jsonSchemaValidator: this.validator,
    });
    preferProtocolVersion(server, this.config.mcp.protocolVersion);
    const session: McpSessionState = { logLevel: new LogThreshold() };
    if (servesContext) {
      session.subscriptions = new ResourceSubscriptions(
        scope.principal,
        this.context,
        (uri) => void server.sendResourceUpdated({ uri }).catch(() => undefined),
      );
    }
    for (const [method, entry] of Object.entries(methods.table) as [McpMethodName, McpMethod][]) {
      if (entry.part === 'context' && !servesContext) continue;
      const { schema, check } = SDK1_REQUESTS[method];
      server.setRequestHandler(schema as typeof ListToolsWithAnyParams, (request, extra) => {
        check?.(request);
        const params: Record<string, unknown> = request.params ?? {};
        return entry.answer(params, requestOf(server, scope, view, session, params, extra)) as never;
      });
    }
    server.onerror = (error) => this.logger.warn(`MCP session ${scope.connectionId}: ${error.message}`);
    // Every list change, once the client has initialized (the revision's rule), until the session closes.
    let announcements: Subscription | undefined;
    server.oninitialized = () => {
      announcements ??= methods.changes.subscribe((kind) => {
        if (kind === 'tools') void server.sendToolListChanged().catch(() => undefined);
        else if (servesContext) void (kind === 'resources' ? server.sendResourceListChanged() : server.sendPromptListChanged()).catch(() => undefined);
      });
    };
    server.onclose = () => {
      announcements?.unsubscribe();
      session.subscriptions?.close();
    };
    return server;
  }
}

/** One request of a 2025 session as the table takes it: the request's signal, the session's caller and state, a task when `params.task` asks for one. */
function requestOf(
  server: Server,
  scope: ToolCallScope,
  view: McpToolView | undefined,
  session: McpSessionState,
  params: Record<string, unknown>,
  extra: Extra,
): McpRequest {
  const request: McpRequest = { scope: scope.withSignal(extra.signal), caller: sessionCaller(server, extra, session.logLevel), view, session };
  const asked = params.task as { ttl?: number | null } | undefined;
  if (!asked || !extra.taskStore) return request;
  const progressToken = extra._meta?.progressToken;
  const task: TaskOffer = {
    asked: true,
    store: extra.taskStore,
    ttl: asked.ttl,
    callerOf: (taskId, stopped) => taskCaller(server, taskId, progressToken, session.logLevel, stopped),
    answer: (started) => ({ task: started }),
  };
  return { ...request, task };
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
