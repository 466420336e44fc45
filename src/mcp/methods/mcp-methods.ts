import { Inject, Injectable } from '@nestjs/common';
import type {
  CallToolRequest,
  CallToolResult,
  CompleteRequest,
  Implementation,
  LoggingLevel,
  ServerCapabilities,
  Task,
  Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { filter, map, merge, Observable } from 'rxjs';
import { GATEWAY_CONFIG, GatewayConfig } from '../../config/gateway-config';
import { ContextCatalogueService } from '../../core/context/context-catalogue.service';
import type { ContextListKind } from '../../core/context/context-source';
import { isPromise, MaybePromise, thenMaybe } from '../../core/maybe-promise';
import { ToolCallService } from '../../core/tools/tool-call.service';
import type { ToolCallScope } from '../../core/tools/tool-call-scope';
import type { ToolCaller, ToolDefinition } from '../../core/tools/tool-definition';
import type { ToolCallControls } from '../../core/tools/tool-invoker';
import { ToolRegistryService } from '../../core/tools/tool-registry.service';
import { runInTraceContext, traceContextOf } from '../../core/tracing/trace-context';
import { GATEWAY_VERSION } from '../../core/version';
import { limitAsMcpError } from '../mcp.errors';
import { toCallToolResult, toMcpTool } from '../mcp.mapper';
import { answeredAsMcp } from './context-errors';
import type { LogThreshold } from './client-notifications';
import type { ResourceSubscriptions } from './resource-subscriptions';
import { McpTasks, TaskStarter } from './tasks/mcp-tasks.service';

/** A part of the catalogue an MCP server serves under names of its own (see `DeviceMcpController`). */
export interface McpToolView {
  /** The tools, as this server names them. */
  list(): ToolDefinition[];
  /** The catalogue's name of the tool this server calls `name`; `undefined` for none. */
  catalogueName(name: string): string | undefined;
}

/** What a session keeps between its requests (the 2025 revisions have sessions; a 2026 request carries all of it). */
export interface McpSessionState {
  /** Set by `logging/setLevel`. */
  logLevel: LogThreshold;
  /** Kept by `resources/subscribe`, when the session serves the upstreams' context. */
  subscriptions?: ResourceSubscriptions;
}

/**
 * A tool call the client asked to run as a task (2025: `task` in the params) or lets run as one
 * (2026: it declared the Tasks extension), and how its revision keeps and tells the task.
 */
export interface TaskOffer {
  /** The client asked for a task: a tool that does not run as one is refused. Otherwise only a long tool becomes one. */
  asked: boolean;
  /** Where the task is kept, as its owner sees the store. */
  store: TaskStarter;
  ttl?: number | null;
  /** The client of the task's call, which outlives the request that started it. */
  callerOf(taskId: string, stopped: AbortSignal): ToolCaller;
  /** The answer to the request that started the task, in its revision's words. */
  answer(task: Task): Record<string, unknown>;
}

/** One request as a binder hands it to a method: whoever asks, and how the method reaches them while it runs. */
export interface McpRequest {
  /** The caller's principal, connection and calls in flight, with the request's own signal. */
  scope: ToolCallScope;
  /** What the request may tell or ask its client while it runs, as its revision carries it; absent when it can carry nothing. */
  caller?: ToolCaller;
  /** The tools of the server the request reached, when it serves a part of the catalogue under names of its own. */
  view?: McpToolView;
  session?: McpSessionState;
  task?: TaskOffer;
  /** The tools this binder can call: another is left to a binder that can (`callTool` answers `undefined`). */
  takes?: (tool: ToolDefinition) => boolean;
  /** A streaming tool's pieces, and the call's stop, for a binder whose stop is not a signal. */
  controls?: ToolCallControls;
}

type Params = Record<string, unknown> & { _meta?: Record<string, unknown> };

/** One method of the table. */
export interface McpMethod {
  /** Served by every server (`tools`), or only by those that serve the upstreams' context (when `MCP_SERVERS_FILE` is set). */
  part: 'tools' | 'context';
  /**
   * What the request names (a tool, a prompt, a resource URI), for a method whose upstream may ask
   * the client something while it runs: a revision that cannot ask during a request (2026) keeps
   * the call waiting for the answers and checks that the retry names the same.
   */
  asksAbout?(params: Params): string;
  answer(params: Params, request: McpRequest): MaybePromise<Record<string, unknown>>;
}

/** The methods of the table, by the name MCP gives them. */
export type McpMethodName = keyof McpMethods['table'];

/** MCP tasks as the gateway serves them to every revision that has them: a long tool's `tools/call`. */
export const TASKS_CAPABILITY = { list: {}, cancel: {}, requests: { tools: { call: {} } } };

/**
 * Every MCP method the gateway answers, once, with nothing of any revision in it: tools, the
 * upstreams' resources, prompts and completions, logging, and tool calls as tasks. Each method
 * takes its params and an {@link McpRequest} (who asks, and how to reach them) and answers a
 * plain result, or throws an `McpError`. The binders (`revisions/`) attach the table to each SDK
 * generation's server and give each request what its revision carries: its signal, a caller for
 * progress, logs and questions, a task offer. Transports never see the table: they pick a binder.
 */
@Injectable()
export class McpMethods {
  readonly info: Implementation;
  /** The list changes every server announces: shared tools added or removed, an upstream's resources or prompts. */
  readonly changes: Observable<'tools' | ContextListKind>;

  readonly table = {
    'tools/list': { part: 'tools', answer: (_params, request) => ({ tools: this.listTools(request) }) },
    'tools/call': {
      part: 'tools',
      asksAbout: (params) => String(params.name),
      answer: (params, request) => this.callTool(params as CallToolRequest['params'], request) ?? unknownTool(params.name),
    },
    'resources/list': { part: 'context', answer: (_params, { scope }) => ({ resources: this.context.listResources(scope.principal) }) },
    'resources/templates/list': {
      part: 'context',
      answer: (_params, { scope }) => ({ resourceTemplates: this.context.listResourceTemplates(scope.principal) }),
    },
    'resources/read': {
      part: 'context',
      asksAbout: (params) => String(params.uri),
      answer: (params, request) => answeredAsMcp(() => this.context.readResource(request.scope.principal, String(params.uri), this.upstreamOptions(request))),
    },
    'resources/subscribe': { part: 'context', answer: (params, { session }) => subscriptionsOf(session).subscribe(String(params.uri)) },
    'resources/unsubscribe': { part: 'context', answer: (params, { session }) => subscriptionsOf(session).unsubscribe(String(params.uri)) },
    'prompts/list': { part: 'context', answer: (_params, { scope }) => ({ prompts: this.context.listPrompts(scope.principal) }) },
    'prompts/get': {
      part: 'context',
      asksAbout: (params) => String(params.name),
      answer: (params, request) =>
        answeredAsMcp(() =>
          this.context.getPrompt(
            request.scope.principal,
            String(params.name),
            params.arguments as Record<string, string> | undefined,
            this.upstreamOptions(request),
          ),
        ),
    },
    'completion/complete': {
      part: 'context',
      answer: (params, request) =>
        answeredAsMcp(() => this.context.complete(request.scope.principal, params as CompleteRequest['params'], this.upstreamOptions(request))),
    },
    'logging/setLevel': {
      part: 'context',
      answer: (params, { session }) => {
        session?.logLevel.set(params.level as LoggingLevel);
        return {};
      },
    },
  } satisfies Record<string, McpMethod>;

  constructor(
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
    private readonly registry: ToolRegistryService,
    private readonly toolCalls: ToolCallService,
    private readonly context: ContextCatalogueService,
    private readonly tasks: McpTasks,
  ) {
    this.info = { name: config.mcp.serverName, version: GATEWAY_VERSION };
    const sharedTools = registry.changes.pipe(
      filter((change) => change.connectionId === undefined),
      map(() => 'tools' as const),
    );
    this.changes = merge(sharedTools, context.changes);
  }

  /** Whether servers serve the upstreams' resources, prompts, completions and logging: when `MCP_SERVERS_FILE` is set. */
  get servesContext(): boolean {
    return this.config.mcp.upstream.serversFile !== undefined;
  }

  /** What the gateway serves, as every revision's capabilities say it (each revision adds its own way to tasks). */
  capabilities(servesContext: boolean): ServerCapabilities {
    if (!servesContext) return { tools: { listChanged: true } };
    return { tools: { listChanged: true }, resources: { listChanged: true, subscribe: true }, prompts: { listChanged: true }, completions: {}, logging: {} };
  }

  /** The input schema of the tool `name` as `tools/list` shows it to `principal`; `undefined` when it sees no such tool. */
  inputSchemaOf(name: string, principal: string): Tool['inputSchema'] | undefined {
    const tool = this.registry.get(name, undefined, principal, 'agent');
    return tool && toMcpTool(tool).inputSchema;
  }

  /** Whether the tool `name` may run as a task for `principal`: it is one of the long ones (`execution.taskSupport: "optional"`). */
  runsAsTask(name: string, principal: string | undefined): boolean {
    return this.registry.get(name, undefined, principal, 'agent')?.longRunning === true;
  }

  private listTools({ scope, view }: McpRequest): Tool[] {
    return (view ? view.list() : this.registry.list(undefined, scope.principal, 'agent')).map(toMcpTool);
  }

  /**
   * `tools/call`: the result, at once when the tool answers at once, or the task it runs as; a
   * client's trace context in `params._meta` (MCP's place for it) is the call's parent.
   * `undefined` when the request's server has no such tool, or `request.takes` leaves it to
   * another binder. A call over the caller's rate limit, or over its connection's calls in
   * flight, throws (or rejects with) an `McpError` -32029.
   */
  callTool(params: CallToolRequest['params'], request: McpRequest): MaybePromise<Record<string, unknown>> | undefined {
    const name = request.view ? request.view.catalogueName(params.name) : params.name;
    if (name === undefined) return undefined;
    const { task } = request;
    if (task && (task.asked || this.runsAsTask(name, request.scope.principal))) return this.startTask(params, name, request, task);
    const controls = request.controls ?? (request.caller && { caller: request.caller });
    return runInTraceContext(traceContextOf(params._meta), () => this.toolCallResult(request.scope, name, params.arguments ?? {}, controls, request.takes));
  }

  /** A task outlives its request: its caller is the task's, and its own stop (a client's cancellation of the task) replaces the request's. */
  private async startTask(params: CallToolRequest['params'], name: string, { scope }: McpRequest, task: TaskOffer): Promise<Record<string, unknown>> {
    if (!this.runsAsTask(name, scope.principal)) {
      throw new McpError(ErrorCode.MethodNotFound, `Tool "${params.name}" does not run as a task (its execution.taskSupport is not "optional")`);
    }
    const started = await this.tasks.start(task.store, task.ttl, async (stopped, { taskId }) => {
      const request = { scope: scope.withSignal(stopped), caller: task.callerOf(taskId, stopped) };
      return (await (this.callTool({ ...params, name }, request) ?? unknownTool(params.name))) as CallToolResult;
    });
    return task.answer(started.task);
  }

  private toolCallResult(
    scope: ToolCallScope,
    name: string,
    args: Record<string, unknown>,
    controls: ToolCallControls | undefined,
    takes: ((tool: ToolDefinition) => boolean) | undefined,
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

  /** What a request to an upstream takes from the client's: its stop, and its caller for what the upstream tells or asks. */
  private upstreamOptions({ scope, caller }: McpRequest): { signal: AbortSignal; caller?: ToolCaller } {
    return { signal: scope.signal!, caller };
  }
}

/** MCP reports an unknown tool as a protocol error, not as a failed call. */
function unknownTool(name: unknown): never {
  throw new McpError(ErrorCode.InvalidParams, `Unknown tool "${String(name)}"`);
}

function subscriptionsOf(session: McpSessionState | undefined): ResourceSubscriptions {
  if (!session?.subscriptions) throw new McpError(ErrorCode.MethodNotFound, 'Method not found');
  return session.subscriptions;
}
