import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleDestroy, Optional } from '@nestjs/common';
import { Observable, Subject } from 'rxjs';
import { GATEWAY_CONFIG, GatewayConfig } from '../../config/gateway-config';
import { AccessTokenService } from '../auth/access-token.service';
import { GatewayError, GatewayErrorCode } from '../errors/gateway-error';
import { CORE_OBSERVER, CoreObserver } from '../observability/core-observer';
import type { MaybePromise } from '../maybe-promise';
import { ArgumentsValidator, JsonSchemaCompiler } from './json-schema';
import type { ToolAudience, ToolCatalogueChange, ToolDefinition, ToolOutcome, ToolSpec } from './tool-definition';
import { CatalogueEntry, InvokeOptions, PreparedToolCall, ToolCallControls, ToolCallWatcher, ToolInvoker } from './tool-invoker';
import { toolNameProblem } from './tool-name';

/** Raised when a tool cannot join the catalogue; the message says why. */
export class ToolRegistrationError extends GatewayError {
  constructor(message: string) {
    super(GatewayErrorCode.TOOL_REGISTRATION_FAILED, message);
    this.name = 'ToolRegistrationError';
  }
}

/**
 * Tools the catalogue shows agents beside its own, decided per caller and per lookup (the tools
 * of a principal's online devices, wherever their sockets are). Its entries are made with
 * {@link ToolRegistryService.compile}, so their arguments are checked like every tool's.
 */
export interface CatalogueSource {
  list(principal: string | undefined): ToolDefinition[];
  entry(name: string, principal: string | undefined): CatalogueEntry | undefined;
}

/**
 * The one catalogue of tools behind every protocol. Shared tools (built-in, `@Tool()` methods,
 * upstream MCP servers) are visible to everyone; client tools belong to one connection and are
 * visible only to it. A call is {@link prepare}d, then {@link run} by its {@link ToolInvoker}:
 * arguments are validated against the tool's schema before any handler runs, every call has a
 * time limit, and a call always ends in a {@link ToolOutcome}. Protocols call through
 * `ToolCallService`, which adds what a client's call needs around {@link run} (its scope: rate
 * limit, calls in flight).
 *
 * A caller's `principal` narrows what it sees: a named token of `AUTH_TOKENS_FILE` sees and
 * calls only the shared tools its `tools` patterns match, in every listing and lookup here, so
 * no protocol can forget the check. A connection's own client tools are always its own.
 */
@Injectable()
export class ToolRegistryService implements OnModuleDestroy, OnApplicationShutdown {
  private readonly logger = new Logger(ToolRegistryService.name);
  private readonly schemas = new JsonSchemaCompiler();
  private readonly shared = new Map<string, CatalogueEntry>();
  private readonly perConnection = new Map<string, Map<string, CatalogueEntry>>();
  private readonly changeStream = new Subject<ToolCatalogueChange>();
  private readonly sources: CatalogueSource[] = [];
  private readonly invoker: ToolInvoker;

  /** Every addition and removal, shared or per connection. */
  readonly changes: Observable<ToolCatalogueChange> = this.changeStream.asObservable();

  constructor(
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
    @Optional() @Inject(CORE_OBSERVER) observer?: CoreObserver,
    /** Whose principal sees which tools; without it (a bare registry in a test) everyone sees everything. */
    @Optional() private readonly tokens?: AccessTokenService,
  ) {
    this.invoker = new ToolInvoker(
      (name, connectionId, principal, audience) => this.entry(name, connectionId, principal, audience),
      this.logger,
      observer?.toolCallEnded,
    );
  }

  /**
   * Adds a tool. With `connectionId` the tool is a client tool of that connection. Throws
   * {@link ToolRegistrationError} for a bad name, a schema that is not JSON Schema, or a name
   * already taken (by a shared tool, or by the same connection).
   */
  register(spec: ToolSpec, connectionId?: string): ToolDefinition {
    if (this.taken(spec.name, connectionId)) throw new ToolRegistrationError(`Tool name already exists: "${spec.name}"`);
    return this.add(this.compile(spec), connectionId);
  }

  /** Adds a tool {@link compile}d already (one compiled once and seen two ways, as a device's tool is by its model and by agents). */
  add(entry: CatalogueEntry, connectionId?: string): ToolDefinition {
    if (this.taken(entry.tool.name, connectionId)) throw new ToolRegistrationError(`Tool name already exists: "${entry.tool.name}"`);
    this.entriesFor(connectionId, true)!.set(entry.tool.name, entry);
    this.changeStream.next({ type: 'added', tool: entry.tool, connectionId });
    return entry.tool;
  }

  private taken(name: string, connectionId: string | undefined): boolean {
    return this.shared.has(name) || (this.perConnection.get(connectionId ?? '')?.has(name) ?? false);
  }

  /**
   * A tool checked and made ready to call, without adding it: what {@link register} adds, and
   * what a {@link CatalogueSource} serves. Throws {@link ToolRegistrationError} for a bad name, a
   * schema that is not JSON Schema, a handler that is not a function. `compiled` is the check of
   * the same input schema made already (by an earlier compile, which checked the schema too).
   */
  compile(spec: ToolSpec, nameProblem: (name: unknown) => string | undefined = toolNameProblem, compiled?: ArgumentsValidator): CatalogueEntry {
    const problem = nameProblem(spec.name);
    if (problem) throw new ToolRegistrationError(problem);
    if (typeof spec.handler !== 'function') {
      throw new ToolRegistrationError(`Tool "${spec.name}" has no handler function`);
    }
    const schemaProblem = compiled ? undefined : this.schemas.inputSchemaProblem(spec.inputSchema);
    if (schemaProblem) throw new ToolRegistrationError(`Tool "${spec.name}": ${schemaProblem}`);
    const outputProblem = spec.outputSchema && this.schemas.schemaProblem(spec.outputSchema);
    if (outputProblem) throw new ToolRegistrationError(`Tool "${spec.name}" output schema: ${outputProblem}`);
    if (spec.timeoutMs !== undefined && !(spec.timeoutMs > 0)) {
      throw new ToolRegistrationError(`Tool "${spec.name}": timeoutMs must be a positive number`);
    }

    let validate: ArgumentsValidator;
    try {
      validate = compiled ?? this.schemas.compile(spec.inputSchema);
    } catch (error) {
      throw new ToolRegistrationError(`Tool "${spec.name}": ${(error as Error).message}`);
    }

    const tool: ToolDefinition = Object.freeze({
      name: spec.name,
      description: spec.description ?? '',
      inputSchema: spec.inputSchema,
      outputSchema: spec.outputSchema,
      ...(spec.presentation && { presentation: spec.presentation }),
      ...(spec.longRunning && { longRunning: true }),
      examples: spec.examples ?? [],
      timeoutMs: spec.timeoutMs ?? this.config.tools.serverToolTimeoutMs,
      tags: spec.tags ?? [],
      source: spec.source,
      handler: spec.handler,
    });
    return { tool, validate };
  }

  /** Adds tools that agents see beside the catalogue's own (a shared tool of the same name wins). */
  addSource(source: CatalogueSource): void {
    this.sources.push(source);
  }

  /** Tells every listener that a {@link CatalogueSource}'s tools changed (MCP's `list_changed`). */
  sourceChanged(change: ToolCatalogueChange): void {
    this.changeStream.next(change);
  }

  /** Removes one tool; returns whether it was there. */
  unregister(name: string, connectionId?: string): boolean {
    const entries = this.entriesFor(connectionId, false);
    const entry = entries?.get(name);
    if (!entries || !entry) return false;
    entries.delete(name);
    if (connectionId !== undefined && entries.size === 0) this.perConnection.delete(connectionId);
    this.changeStream.next({ type: 'removed', tool: entry.tool, connectionId });
    return true;
  }

  /** Removes every shared tool of `source` (an upstream that went away); returns how many. */
  unregisterSource(source: ToolDefinition['source']): number {
    const names = [...this.shared.values()].filter((e) => e.tool.source === source).map((e) => e.tool.name);
    names.forEach((name) => this.unregister(name));
    return names.length;
  }

  /** Removes every client tool of a connection (it closed); returns how many. */
  unregisterConnection(connectionId: string): number {
    const names = [...(this.perConnection.get(connectionId)?.keys() ?? [])];
    names.forEach((name) => this.unregister(name, connectionId));
    return names.length;
  }

  /** Tool calls running now that did not answer at once, on the server or waiting for a device. */
  get callsRunning(): number {
    return this.invoker.running;
  }

  /** Resolves once no call is {@link callsRunning running}: what a shutdown's drain waits for, whatever the protocol. */
  whenNoCallsRunning(): Promise<void> {
    return this.invoker.whenIdle();
  }

  /**
   * Ends every call running now with `TOOL_UNAVAILABLE` and `message` (a drain's deadline passed),
   * so that each protocol answers its caller with that failure before its socket closes; how many.
   */
  abandonCallsRunning(message: string): number {
    return this.invoker.abandonAll(message);
  }

  /** The tool `name` as `connectionId`, `principal` and `audience` see it: its own client tools first, then shared ones, then for agents the sources'. */
  get(name: string, connectionId?: string, principal?: string, audience: ToolAudience = 'model'): ToolDefinition | undefined {
    return this.entry(name, connectionId, principal, audience)?.tool;
  }

  /** Every tool `connectionId` and `principal` may call: shared tools, then its client tools, then for agents the sources'. */
  list(connectionId?: string, principal?: string, audience: ToolAudience = 'model'): ToolDefinition[] {
    const grant = this.tokens?.grantOf(principal);
    let shared = [...this.shared.values()].map((e) => e.tool);
    if (grant?.restrictsTools) shared = shared.filter((tool) => grant.mayUseTool(tool.name));
    const own = connectionId === undefined ? [] : [...(this.perConnection.get(connectionId)?.values() ?? [])];
    const listed = own.length === 0 ? shared : [...shared, ...own.map((e) => e.tool)];
    if (audience === 'model' || this.sources.length === 0) return listed;
    return [...listed, ...this.sources.flatMap((source) => source.list(principal))];
  }

  /**
   * Looks a call up as `connectionId` and `principal` see the catalogue and checks its arguments,
   * once: what {@link run} runs, and what a caller that decides something first (the tool is
   * unknown; it runs on a device) reads. Never throws: a problem is kept for {@link run} to
   * report as the call's failure.
   */
  prepare(name: string, args: unknown, connectionId?: string, principal?: string, audience: ToolAudience = 'model'): PreparedToolCall {
    return this.invoker.prepare(name, args, connectionId, principal, audience);
  }

  /**
   * Runs a prepared call for the caller `options` describes: its outcome at once when the handler
   * answered synchronously, a promise otherwise; never throws. `controls.onPartial` hears each
   * partial result of a streaming tool (the outcome's value is its final result: what it
   * returned, else its last piece), and `controls.cancel` is filled with a way to stop the call.
   */
  run(prepared: PreparedToolCall, options: InvokeOptions = {}, controls?: ToolCallControls): MaybePromise<ToolOutcome> {
    return this.invoker.run(prepared, options, controls);
  }

  /** Adds a watcher of every tool call from its start, whatever the protocol and the tool's source (the audit log, traces). */
  watch(watcher: ToolCallWatcher): void {
    this.invoker.watch(watcher);
  }

  onModuleDestroy(): void {
    this.changeStream.complete();
  }

  /** After the drain (Nest runs `onModuleDestroy` before it), so the calls it waits for keep their count and time limits. */
  onApplicationShutdown(): void {
    this.invoker.stop();
  }

  private entry(name: string, connectionId?: string, principal?: string, audience: ToolAudience = 'model'): CatalogueEntry | undefined {
    const own = connectionId !== undefined && this.perConnection.get(connectionId)?.get(name);
    if (own) return own;
    const shared = this.shared.get(name);
    if (shared) return principal === undefined || !this.tokens || this.tokens.grantOf(principal).mayUseTool(name) ? shared : undefined;
    if (audience === 'model') return undefined;
    for (const source of this.sources) {
      const found = source.entry(name, principal);
      if (found) return found;
    }
    return undefined;
  }

  private entriesFor(connectionId: string | undefined, create: boolean): Map<string, CatalogueEntry> | undefined {
    if (connectionId === undefined) return this.shared;
    let entries = this.perConnection.get(connectionId);
    if (!entries && create) this.perConnection.set(connectionId, (entries = new Map()));
    return entries;
  }
}
