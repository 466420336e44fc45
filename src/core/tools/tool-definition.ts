import type { GatewayErrorCode } from '../errors/gateway-error';
import type { JsonSchema } from './json-schema';

/** Where a tool comes from; each protocol may show it (the catalogue, health, logs). */
export type ToolSource = 'builtin' | 'module' | `mcp:${string}` | `client:${string}` | `device:${string}`;

/**
 * Who looks at the catalogue: `model`, an LLM-gateway turn's model (its connection's own device
 * tools, the shared tools); `agent`, a client of MCP, UTCP, LiteMCP or HTTP, which also sees the
 * tools that {@link CatalogueSource}s add (the tools of the principal's online devices).
 */
export type ToolAudience = 'model' | 'agent';

/** One worked example: what a user might ask, and the arguments that answer it. */
export interface ToolExample {
  description: string;
  arguments?: Record<string, unknown>;
}

/**
 * What a tool may tell, or ask, the client that called it while the call runs: MCP's progress,
 * log messages and requests from the server (elicitation, sampling, roots). A member is absent
 * when the caller's protocol or client cannot carry it. The last three are for callers whose
 * client says with each request what it can be asked (MCP 2026-07-28), which a gateway in front
 * of a server of that revision passes on.
 */
export interface ToolCaller {
  /** Resolves once the update is on its way, so a relay can send it before the call's result. */
  progress?(update: { progress: number; total?: number; message?: string }): Promise<void>;
  log?(message: { level: string; logger?: string; data: unknown }): Promise<void>;
  /**
   * Sends `method` to the caller's client and resolves with its answer; rejects when the client
   * cannot answer it. `key` is the name the question had where it came from (the key of an
   * upstream's 2026 `inputRequests`), which a caller that names its questions keeps when it can.
   */
  request?(method: string, params: Record<string, unknown> | undefined, signal: AbortSignal, key?: string): Promise<Record<string, unknown>>;
  /** The client capabilities the caller's request declared (`elicitation`, `sampling`, `roots`...): a server should ask no more. */
  declaredCapabilities?(): Record<string, unknown>;
  /** Ends the call: the server it went to cannot serve it without `required`, which the client did not declare (MCP's -32021). */
  missingCapabilities?(required: Record<string, unknown>, message: string): void;
  /** The answers the client sent with its request without being asked (`inputResponses`), for the server the call goes to; once. */
  takeUnaskedAnswers?(): Record<string, unknown> | undefined;
}

/** What a handler learns about the call it serves. */
export interface ToolCallContext {
  /** Aborted when the call times out or its caller goes away; long handlers should watch it. */
  signal: AbortSignal;
  /** The authenticated caller (a stable, non-secret id of its token), when auth is on. */
  principal?: string;
  /** The connection the call arrived on, for tools that act per connection. */
  connectionId?: string;
  /** The LLM-gateway session the call belongs to, if any. */
  sessionId?: string;
  /** The LLM-gateway turn the call belongs to, if any. */
  turnId?: string;
  /** The client that made the call, for what it can be told or asked while the call runs. */
  caller?: ToolCaller;
}

/**
 * Runs a tool. It returns the result (or a promise of it), or streams: an async generator (or
 * any AsyncIterable) yields partial results as they come and may `return` the final one; when
 * it returns nothing, its last partial result is the final one.
 */
export type ToolHandler = (args: Record<string, unknown>, context: ToolCallContext) => unknown;

/** A tool as a provider declares it: defined once, projected by every protocol. */
export interface ToolSpec {
  name: string;
  description: string;
  /** JSON Schema of the arguments object; `{type: "object"}` at the top level. */
  inputSchema: JsonSchema;
  /** JSON Schema of the result, when the tool returns structured data. */
  outputSchema?: JsonSchema;
  /** How clients may show and treat the tool (MCP's `title`, `annotations` and `icons`); no call depends on it. */
  presentation?: ToolPresentation;
  /** A call may run long: MCP clients may run it as a task (`execution.taskSupport: "optional"`) and fetch its result later. */
  longRunning?: boolean;
  examples?: ToolExample[];
  /** Time limit in ms; the gateway's `SERVER_TOOL_TIMEOUT` when omitted. */
  timeoutMs?: number;
  tags?: string[];
  source: ToolSource;
  handler: ToolHandler;
}

/**
 * MCP's hints about a tool, for clients to show it and decide how careful to be: a display title,
 * annotations (`readOnlyHint`, `destructiveHint`, `idempotentHint`, `openWorldHint`, `title`) and
 * icons. Upstream tools keep their own; they reach MCP clients as the upstream sent them.
 */
export interface ToolPresentation {
  title?: string;
  annotations?: Record<string, unknown>;
  icons?: Record<string, unknown>[];
}

/** A tool in the catalogue: the spec with its defaults filled in. */
export interface ToolDefinition extends Readonly<Required<Omit<ToolSpec, 'outputSchema' | 'presentation' | 'longRunning'>>> {
  readonly outputSchema?: JsonSchema;
  readonly presentation?: ToolPresentation;
  readonly longRunning?: boolean;
}

/** An MCP-style content block, for results that carry more than a JSON value (images...). */
export interface ToolContentBlock {
  type: string;
  [key: string]: unknown;
}

export interface ToolSuccess {
  ok: true;
  /** The JSON value the tool returned (for a `ToolContentResult`: its structured value, else its text). */
  value: unknown;
  /** Content blocks, when the tool produced them itself by returning a `ToolContentResult` (upstream MCP tools do). */
  content?: ToolContentBlock[];
  durationMs: number;
}

export type ToolFailureCode = Extract<
  GatewayErrorCode,
  'TOOL_NOT_FOUND' | 'INVALID_TOOL_PARAMETERS' | 'TOOL_EXECUTION_FAILED' | 'TOOL_TIMEOUT' | 'TOOL_UNAVAILABLE'
>;

export interface ToolFailure {
  ok: false;
  code: ToolFailureCode;
  /** Safe to show to the caller and to the model. */
  message: string;
  details?: unknown;
  /**
   * The handler threw what no tool throws on purpose (neither a `ToolError` nor a `GatewayError`):
   * a fault of the server, logged, its message saying only that. Every other failure is one the
   * tool or the request explains, which HTTP answers with a 4xx (or 503/504) rather than a 500.
   */
  internal?: true;
  durationMs: number;
}

/** What a call ends in: never an exception. */
export type ToolOutcome = ToolSuccess | ToolFailure;

/** Emitted whenever the catalogue changes, so protocols can tell their clients. */
export interface ToolCatalogueChange {
  type: 'added' | 'removed';
  tool: ToolDefinition;
  /** Set for client tools, which only their connection sees. */
  connectionId?: string;
}
