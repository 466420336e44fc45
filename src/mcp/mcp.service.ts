import { Inject, Injectable, Logger } from '@nestjs/common';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv-provider.js';
import {
  CallToolResult,
  CallToolRequest,
  CallToolRequestSchema,
  ErrorCode,
  Implementation,
  InitializeRequest,
  InitializeResult,
  McpError,
  RequestSchema,
  SUPPORTED_PROTOCOL_VERSIONS,
} from '@modelcontextprotocol/sdk/types.js';
import { filter, Subscription } from 'rxjs';
import { InvalidConfigurationError } from '../config/environment';
import { GATEWAY_CONFIG, GatewayConfig } from '../config/gateway-config';
import { RateLimitService } from '../core/limits/rate-limit.service';
import { CallsInFlight, TooManyCallsError } from '../core/limits/calls-in-flight';
import { RateLimitedError } from '../core/limits/rate-limited.error';
import { isPromise, MaybePromise, thenMaybe } from '../core/maybe-promise';
import type { InvokeOptions } from '../core/tools/tool-invoker';
import { ToolRegistryService } from '../core/tools/tool-registry.service';
import { runInTraceContext, traceContextOf } from '../core/tracing/trace-context';
import { GATEWAY_VERSION } from '../core/version';
import { checkedInitialize, checkedListTools, InitializeWithAnyParams, ListToolsWithAnyParams } from './request-params';
import { MCP_PROTOCOL } from './mcp.constants';
import { RATE_LIMITED_ERROR } from './mcp.errors';
import { toCallToolResult, toMcpTool } from './mcp.mapper';

/** Who an MCP session serves; passed to every tool call it makes. */
export interface McpCaller {
  principal?: string;
  /** The WebSocket connection or Streamable HTTP session. */
  connectionId: string;
  /** The connection's bound on calls running at once. */
  callsInFlight?: CallsInFlight;
}

/**
 * `tools/call` with any params. The SDK parses a request against the handler's schema before its
 * own `tools/call` check runs, and reports a failed parse as -32603; with loose params here, that
 * check answers a malformed call with -32602 "Invalid params", as JSON-RPC says.
 */
const ToolsCallWithAnyParams = CallToolRequestSchema.extend({ params: RequestSchema.shape.params });

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
    private readonly limits: RateLimitService,
  ) {
    const { enabled, serverName, protocolVersion } = config.mcp;
    if (enabled && !SUPPORTED_PROTOCOL_VERSIONS.includes(protocolVersion)) {
      throw new InvalidConfigurationError([
        `MCP_PROTOCOL_VERSION must be one of ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')} (got ${JSON.stringify(protocolVersion)})`,
      ]);
    }
    this.serverInfo = { name: serverName, version: GATEWAY_VERSION };
  }

  /** The name and version the gateway announces as an MCP server. */
  get info(): Implementation {
    return this.serverInfo;
  }

  createServer(caller: McpCaller): Server {
    const server = new Server(this.serverInfo, {
      capabilities: { tools: { listChanged: true } },
      debouncedNotificationMethods: ['notifications/tools/list_changed'],
      jsonSchemaValidator: this.validator,
    });
    preferProtocolVersion(server, this.config.mcp.protocolVersion);
    server.setRequestHandler(ListToolsWithAnyParams, (request) => {
      checkedListTools(request);
      return { tools: this.registry.list(undefined, caller.principal).map(toMcpTool) };
    });
    server.setRequestHandler(ToolsCallWithAnyParams, (request, extra) =>
      // The SDK has checked the params against CallToolRequestSchema by now (see ToolsCallWithAnyParams).
      this.call((request as CallToolRequest).params, caller, extra.signal),
    );
    server.onerror = (error) => this.logger.warn(`MCP session ${caller.connectionId}: ${error.message}`);

    let announcements: Subscription | undefined;
    server.oninitialized = () => {
      announcements ??= this.registry.changes
        .pipe(filter((change) => change.connectionId === undefined))
        .subscribe(() => server.sendToolListChanged().catch(() => undefined));
    };
    server.onclose = () => announcements?.unsubscribe();
    return server;
  }

  /**
   * A `tools/call` of `name` as MCP answers it, at once when the tool answers at once;
   * `undefined` when the catalogue has no such tool for the caller (MCP's answer is then a
   * protocol error). A call over the caller's rate limit, or over its connection's calls in
   * flight, throws (or rejects with) an {@link McpError} -32029.
   */
  toolCallResult(name: string, args: Record<string, unknown>, options: McpCaller & InvokeOptions): MaybePromise<CallToolResult> | undefined {
    const tool = this.registry.get(name, undefined, options.principal);
    if (!tool) return undefined;
    let result: MaybePromise<CallToolResult>;
    try {
      result = this.limits.runToolCall(
        options.principal,
        () => thenMaybe(this.registry.invoke(name, args, options), (outcome) => toCallToolResult(tool, outcome)),
        options.callsInFlight,
      );
    } catch (error) {
      throw asMcpError(error);
    }
    return isPromise(result) ? result.catch((error: unknown) => Promise.reject(asMcpError(error))) : result;
  }

  private async call(params: CallToolRequest['params'], caller: McpCaller, signal: AbortSignal): Promise<CallToolResult> {
    // A client's trace context in `params._meta` (MCP's place for it) is the call's parent, over any the transport carried.
    const result = runInTraceContext(traceContextOf(params._meta), () =>
      this.toolCallResult(params.name, params.arguments ?? {}, { ...caller, signal, protocol: MCP_PROTOCOL }),
    );
    // MCP reports an unknown tool as a protocol error, not as a failed call.
    if (!result) throw new McpError(ErrorCode.InvalidParams, `Unknown tool "${params.name}"`);
    return result;
  }
}

/** A rate limit or a full connection as MCP says it: a JSON-RPC error, with the wait in `data` when there is one; anything else as it was. */
function asMcpError(error: unknown): unknown {
  if (error instanceof RateLimitedError) return new McpError(RATE_LIMITED_ERROR, error.message, error.wait);
  return error instanceof TooManyCallsError ? new McpError(RATE_LIMITED_ERROR, error.message) : error;
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
