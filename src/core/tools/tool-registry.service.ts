import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleDestroy, Optional } from '@nestjs/common';
import { Observable, Subject } from 'rxjs';
import { GATEWAY_CONFIG, GatewayConfig } from '../../config/gateway-config';
import { AccessTokenService } from '../auth/access-token.service';
import { GatewayError, GatewayErrorCode } from '../errors/gateway-error';
import { MetricsService } from '../../metrics/metrics.service';
import { MaybePromise, thenMaybe } from '../maybe-promise';
import { ArgumentsValidator, JsonSchemaCompiler } from './json-schema';
import type { ToolCatalogueChange, ToolDefinition, ToolOutcome, ToolSpec, ToolStreamEvent } from './tool-definition';
import {
  CatalogueEntry,
  Cancellation,
  checkArguments,
  InvokeOptions,
  PreparedToolCall,
  ToolCallOptions,
  ToolCallWatcher,
  ToolInvoker,
} from './tool-invoker';
import { toolNameProblem } from './tool-name';

/** Raised when a tool cannot join the catalogue; the message says why. */
export class ToolRegistrationError extends GatewayError {
  constructor(message: string) {
    super(GatewayErrorCode.TOOL_REGISTRATION_FAILED, message);
    this.name = 'ToolRegistrationError';
  }
}

export type { ToolCallOptions } from './tool-invoker';

/**
 * The one catalogue of tools behind every protocol. Shared tools (built-in, `@Tool()` methods,
 * upstream MCP servers) are visible to everyone; client tools belong to one connection and are
 * visible only to it. Calls go through its {@link ToolInvoker}: arguments are validated against
 * the tool's schema before any handler runs, every call has a time limit, and a call always ends
 * in a {@link ToolOutcome}.
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
  private readonly invoker: ToolInvoker;

  /** Every addition and removal, shared or per connection. */
  readonly changes: Observable<ToolCatalogueChange> = this.changeStream.asObservable();

  constructor(
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
    @Optional() metrics?: MetricsService,
    /** Whose principal sees which tools; without it (a bare registry in a test) everyone sees everything. */
    @Optional() private readonly tokens?: AccessTokenService,
  ) {
    this.invoker = new ToolInvoker((name, connectionId, principal) => this.entry(name, connectionId, principal), this.logger, metrics?.toolCallEnded);
  }

  /**
   * Adds a tool. With `connectionId` the tool is a client tool of that connection. Throws
   * {@link ToolRegistrationError} for a bad name, a schema that is not JSON Schema, or a name
   * already taken (by a shared tool, or by the same connection).
   */
  register(spec: ToolSpec, connectionId?: string): ToolDefinition {
    const nameProblem = toolNameProblem(spec.name);
    if (nameProblem) throw new ToolRegistrationError(nameProblem);
    if (typeof spec.handler !== 'function') {
      throw new ToolRegistrationError(`Tool "${spec.name}" has no handler function`);
    }
    if (this.shared.has(spec.name) || this.perConnection.get(connectionId ?? '')?.has(spec.name)) {
      throw new ToolRegistrationError(`Tool name already exists: "${spec.name}"`);
    }
    const schemaProblem = this.schemas.inputSchemaProblem(spec.inputSchema);
    if (schemaProblem) throw new ToolRegistrationError(`Tool "${spec.name}": ${schemaProblem}`);
    const outputProblem = spec.outputSchema && this.schemas.schemaProblem(spec.outputSchema);
    if (outputProblem) throw new ToolRegistrationError(`Tool "${spec.name}" output schema: ${outputProblem}`);
    if (spec.timeoutMs !== undefined && !(spec.timeoutMs > 0)) {
      throw new ToolRegistrationError(`Tool "${spec.name}": timeoutMs must be a positive number`);
    }

    let validate: ArgumentsValidator;
    try {
      validate = this.schemas.compile(spec.inputSchema);
    } catch (error) {
      throw new ToolRegistrationError(`Tool "${spec.name}": ${(error as Error).message}`);
    }

    const tool: ToolDefinition = Object.freeze({
      name: spec.name,
      description: spec.description ?? '',
      inputSchema: spec.inputSchema,
      outputSchema: spec.outputSchema,
      examples: spec.examples ?? [],
      timeoutMs: spec.timeoutMs ?? this.config.tools.serverToolTimeoutMs,
      tags: spec.tags ?? [],
      source: spec.source,
      handler: spec.handler,
    });
    this.entriesFor(connectionId, true)!.set(tool.name, { tool, validate });
    this.changeStream.next({ type: 'added', tool, connectionId });
    return tool;
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

  /** The tool `name` as `connectionId` and `principal` see it: its own client tools first, then shared ones. */
  get(name: string, connectionId?: string, principal?: string): ToolDefinition | undefined {
    return this.entry(name, connectionId, principal)?.tool;
  }

  /** Every tool `connectionId` and `principal` may call: shared tools, then its client tools. */
  list(connectionId?: string, principal?: string): ToolDefinition[] {
    const grant = this.tokens?.grantOf(principal);
    let shared = [...this.shared.values()].map((e) => e.tool);
    if (grant?.restrictsTools) shared = shared.filter((tool) => grant.mayUseTool(tool.name));
    const own = connectionId === undefined ? [] : [...(this.perConnection.get(connectionId)?.values() ?? [])];
    return own.length === 0 ? shared : [...shared, ...own.map((e) => e.tool)];
  }

  /**
   * Looks the tool up as `options.connectionId` sees it, then runs it. A streaming tool is
   * drained: the outcome's value is its final result (what it returned, else its last piece).
   */
  call(name: string, args: unknown, options: ToolCallOptions = {}): Promise<ToolOutcome> {
    return Promise.resolve(this.invoker.invoke(name, args, options));
  }

  /**
   * {@link call} for the protocols' hot paths: the outcome at once when the handler answered
   * synchronously, a promise otherwise; partial results of a streaming tool go to
   * `options.onPartial`, and `options.cancellation` is filled with a way to stop the call.
   */
  invoke(name: string, args: unknown, options: InvokeOptions = {}): MaybePromise<ToolOutcome> {
    return this.invoker.invoke(name, args, options);
  }

  /** Looks a call up and checks its arguments once, for a caller that decides something before running it. */
  prepare(name: string, args: unknown, connectionId?: string, principal?: string): PreparedToolCall {
    return this.invoker.prepare(name, args, connectionId, principal);
  }

  /** Runs a call {@link prepare} made, without checking its arguments again. */
  run(prepared: PreparedToolCall, options: InvokeOptions = {}): MaybePromise<ToolOutcome> {
    return this.invoker.run(prepared, options);
  }

  /**
   * {@link call}, reporting each partial result of a streaming tool as it comes, then the
   * outcome; the same validation, time limit and failures. The call starts on subscription;
   * unsubscribing cancels it (its signal aborts and its generator is closed), so a protocol
   * that drops a caller drops the call. Never errors.
   */
  stream(name: string, args: unknown, options: ToolCallOptions = {}): Observable<ToolStreamEvent> {
    return new Observable<ToolStreamEvent>((subscriber) => {
      const cancellation: Cancellation = {};
      let over = false;
      const outcome = this.invoker.invoke(name, args, {
        ...options,
        cancellation,
        onPartial: (value) => subscriber.next({ type: 'partial', value }),
      });
      void thenMaybe(outcome, (settled) => {
        over = true;
        subscriber.next({ type: 'outcome', outcome: settled });
        subscriber.complete();
      });
      return () => {
        if (!over) cancellation.cancel?.();
      };
    });
  }

  /** Adds a watcher of every tool call from its start, whatever the protocol and the tool's source (the audit log, traces). */
  watch(watcher: ToolCallWatcher): void {
    this.invoker.watch(watcher);
  }

  /** Checks `args` against the tool's input schema; the readable problem, or `undefined`. */
  validateArguments(name: string, args: unknown, connectionId?: string, principal?: string): string | undefined {
    const entry = this.entry(name, connectionId, principal);
    if (!entry) return `Unknown tool "${name}"`;
    return checkArguments(entry, args);
  }

  onModuleDestroy(): void {
    this.changeStream.complete();
  }

  /** After the drain (Nest runs `onModuleDestroy` before it), so the calls it waits for keep their count and time limits. */
  onApplicationShutdown(): void {
    this.invoker.stop();
  }

  private entry(name: string, connectionId?: string, principal?: string): CatalogueEntry | undefined {
    const own = connectionId !== undefined && this.perConnection.get(connectionId)?.get(name);
    if (own) return own;
    const shared = this.shared.get(name);
    return shared && (principal === undefined || !this.tokens || this.tokens.grantOf(principal).mayUseTool(name)) ? shared : undefined;
  }

  private entriesFor(connectionId: string | undefined, create: boolean): Map<string, CatalogueEntry> | undefined {
    if (connectionId === undefined) return this.shared;
    let entries = this.perConnection.get(connectionId);
    if (!entries && create) this.perConnection.set(connectionId, (entries = new Map()));
    return entries;
  }
}
