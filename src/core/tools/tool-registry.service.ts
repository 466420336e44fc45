import { Inject, Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import { Observable, Subject } from 'rxjs';
import { GATEWAY_CONFIG, GatewayConfig } from '../../config/gateway-config';
import { GatewayError, GatewayErrorCode } from '../errors/gateway-error';
import { ArgumentsValidator, JsonSchemaCompiler } from './json-schema';
import { textOfContent, ToolContentResult } from './tool-content';
import {
  ToolCallContext,
  ToolCatalogueChange,
  ToolDefinition,
  ToolFailure,
  ToolFailureCode,
  ToolOutcome,
  ToolSpec,
  ToolStreamEvent,
  ToolSuccess,
} from './tool-definition';
import { ToolError } from './tool-error';
import { toolNameProblem } from './tool-name';

/** Raised when a tool cannot join the catalogue; the message says why. */
export class ToolRegistrationError extends GatewayError {
  constructor(message: string) {
    super(GatewayErrorCode.TOOL_REGISTRATION_FAILED, message);
    this.name = 'ToolRegistrationError';
  }
}

/** What the caller of {@link ToolRegistryService.call} may tell about the call. */
export type ToolCallOptions = Partial<ToolCallContext>;

type PartialResultListener = (value: unknown) => void;

/** Filled in by a running call: how {@link ToolRegistryService.stream} stops it when its subscriber leaves. */
interface Cancellation {
  cancel?: () => void;
}

interface CatalogueEntry {
  tool: ToolDefinition;
  validate: ArgumentsValidator;
}

class ToolTimeoutSignal extends Error {}

/**
 * The one catalogue of tools behind every protocol. Shared tools (built-in, `@Tool()` methods,
 * upstream MCP servers) are visible to everyone; client tools belong to one connection and are
 * visible only to it. Arguments are validated against the tool's schema before any handler
 * runs, every call has a time limit, and a call always ends in a {@link ToolOutcome}.
 */
@Injectable()
export class ToolRegistryService implements OnModuleDestroy {
  private readonly logger = new Logger(ToolRegistryService.name);
  private readonly schemas = new JsonSchemaCompiler();
  private readonly shared = new Map<string, CatalogueEntry>();
  private readonly perConnection = new Map<string, Map<string, CatalogueEntry>>();
  private readonly changeStream = new Subject<ToolCatalogueChange>();

  /** Every addition and removal, shared or per connection. */
  readonly changes: Observable<ToolCatalogueChange> = this.changeStream.asObservable();

  constructor(@Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig) {}

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
    entry.validate.dispose();
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

  /** The tool `name` as `connectionId` sees it: its own client tools first, then shared ones. */
  get(name: string, connectionId?: string): ToolDefinition | undefined {
    return this.entry(name, connectionId)?.tool;
  }

  /** Every tool `connectionId` may call: shared tools, then its client tools. */
  list(connectionId?: string): ToolDefinition[] {
    const shared = [...this.shared.values()].map((e) => e.tool);
    const own = connectionId === undefined ? [] : [...(this.perConnection.get(connectionId)?.values() ?? [])];
    return own.length === 0 ? shared : [...shared, ...own.map((e) => e.tool)];
  }

  /**
   * Looks the tool up as `options.connectionId` sees it, then runs it. A streaming tool is
   * drained: the outcome's value is its final result (what it returned, else its last piece).
   */
  call(name: string, args: unknown, options: ToolCallOptions = {}): Promise<ToolOutcome> {
    return this.invoke(name, args, options);
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
      void this.invoke(name, args, options, (value) => subscriber.next({ type: 'partial', value }), cancellation).then(
        (outcome) => {
          over = true;
          subscriber.next({ type: 'outcome', outcome });
          subscriber.complete();
        },
      );
      // Aborting builds a DOMException and runs the listeners: worth it only for a call still running.
      return () => {
        if (!over) cancellation.cancel?.();
      };
    });
  }

  /** Checks `args` against the tool's input schema; the readable problem, or `undefined`. */
  validateArguments(name: string, args: unknown, connectionId?: string): string | undefined {
    const entry = this.entry(name, connectionId);
    if (!entry) return `Unknown tool "${name}"`;
    return checkArguments(entry, args);
  }

  onModuleDestroy(): void {
    this.changeStream.complete();
  }

  private async invoke(
    name: string,
    args: unknown,
    options: ToolCallOptions,
    onPartial?: PartialResultListener,
    cancellation?: Cancellation,
  ): Promise<ToolOutcome> {
    const entry = this.entry(name, options.connectionId);
    if (!entry) return failure('TOOL_NOT_FOUND', `Unknown tool "${name}"`, performance.now());
    return this.run(entry, args, options, onPartial, cancellation);
  }

  private async run(
    entry: CatalogueEntry,
    rawArgs: unknown,
    options: ToolCallOptions,
    onPartial?: PartialResultListener,
    cancellation?: Cancellation,
  ): Promise<ToolOutcome> {
    const { tool } = entry;
    const started = performance.now();
    const args = rawArgs ?? {};
    const problem = checkArguments(entry, args);
    if (problem) {
      return failure('INVALID_TOOL_PARAMETERS', `Invalid arguments for tool "${tool.name}": ${problem}`, started);
    }
    if (options.signal?.aborted) return cancelled(tool, started);

    // One controller and one promise per call: the handler's signal, and what ends the race
    // early (the time limit, the caller going away).
    const controller = new AbortController();
    let interrupt!: (reason: unknown) => void;
    const interrupted = new Promise<never>((_, reject) => {
      interrupt = (reason) => {
        controller.abort(reason);
        reject(reason);
      };
    });
    let cancelledByCaller = false;
    const cancel = () => {
      cancelledByCaller = true;
      interrupt(options.signal?.reason ?? new DOMException('The caller went away', 'AbortError'));
    };
    options.signal?.addEventListener('abort', cancel, { once: true });
    if (cancellation) cancellation.cancel = cancel;
    const timer = setTimeout(() => interrupt(new ToolTimeoutSignal()), tool.timeoutMs);

    try {
      const running = Promise.resolve()
        .then(() => tool.handler(args as Record<string, unknown>, { ...options, signal: controller.signal }))
        .then((result) => (isAsyncIterable(result) ? finalResultOf(result, controller.signal, onPartial) : result));
      // A handler that ignores the signal may still settle after its deadline; nobody awaits it then.
      running.catch(() => undefined);
      return success(await Promise.race([running, interrupted]), started);
    } catch (error) {
      if (cancelledByCaller && !(error instanceof ToolTimeoutSignal)) return cancelled(tool, started);
      return this.describeFailure(tool, error, started);
    } finally {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', cancel);
    }
  }

  private describeFailure(tool: ToolDefinition, error: unknown, started: number): ToolFailure {
    if (error instanceof ToolTimeoutSignal) {
      return failure('TOOL_TIMEOUT', `Tool "${tool.name}" did not finish within ${tool.timeoutMs / 1000} s`, started);
    }
    if (error instanceof ToolError) {
      return { ...failure('TOOL_EXECUTION_FAILED', error.message, started), details: error.details };
    }
    if (error instanceof GatewayError && isToolFailureCode(error.code)) {
      return failure(error.code, error.message, started);
    }
    this.logger.error(`Tool "${tool.name}" threw: ${(error as Error)?.stack ?? String(error)}`);
    return failure('TOOL_EXECUTION_FAILED', `Tool "${tool.name}" failed with an internal error`, started);
  }

  private entry(name: string, connectionId?: string): CatalogueEntry | undefined {
    return (connectionId !== undefined && this.perConnection.get(connectionId)?.get(name)) || this.shared.get(name);
  }

  private entriesFor(connectionId: string | undefined, create: boolean): Map<string, CatalogueEntry> | undefined {
    if (connectionId === undefined) return this.shared;
    let entries = this.perConnection.get(connectionId);
    if (!entries && create) this.perConnection.set(connectionId, (entries = new Map()));
    return entries;
  }
}

function isAsyncIterable(value: unknown): value is AsyncIterable<unknown> {
  return (
    value !== null &&
    (typeof value === 'object' || typeof value === 'function') &&
    typeof (value as Partial<AsyncIterable<unknown>>)[Symbol.asyncIterator] === 'function'
  );
}

/**
 * Drains a streaming handler, passing each piece to `onPartial`, and resolves with its final
 * result: what it returned, else the last piece it yielded. Once the call is over (time limit,
 * cancellation) the iterator is closed, and whatever it still yields is dropped: no piece
 * arrives after the outcome.
 */
async function finalResultOf(
  pieces: AsyncIterable<unknown>,
  signal: AbortSignal,
  onPartial?: PartialResultListener,
): Promise<unknown> {
  const iterator = pieces[Symbol.asyncIterator]();
  const close = () => void Promise.resolve(iterator.return?.()).catch(() => undefined);
  signal.addEventListener('abort', close, { once: true });
  let last: unknown;
  try {
    for (;;) {
      const step = await iterator.next();
      if (signal.aborted) return undefined;
      if (step.done) return step.value !== undefined ? step.value : last;
      last = step.value;
      onPartial?.(last);
    }
  } finally {
    signal.removeEventListener('abort', close);
  }
}

function checkArguments(entry: CatalogueEntry, args: unknown): string | undefined {
  if (args === null || typeof args !== 'object' || Array.isArray(args)) return 'arguments must be a JSON object';
  return entry.validate(args);
}

const TOOL_FAILURE_CODES = new Set<string>([
  'TOOL_NOT_FOUND',
  'INVALID_TOOL_PARAMETERS',
  'TOOL_EXECUTION_FAILED',
  'TOOL_TIMEOUT',
  'TOOL_UNAVAILABLE',
]);

function isToolFailureCode(code: string): code is ToolFailureCode {
  return TOOL_FAILURE_CODES.has(code);
}

function cancelled(tool: ToolDefinition, started: number): ToolFailure {
  return failure('TOOL_EXECUTION_FAILED', `Call to tool "${tool.name}" was cancelled`, started);
}

/** A handler's return value as a success; a {@link ToolContentResult} is unwrapped into its blocks and value. */
function success(returned: unknown, started: number): ToolSuccess {
  const durationMs = performance.now() - started;
  if (!(returned instanceof ToolContentResult)) return { ok: true, value: returned, durationMs };
  const { content, structuredContent } = returned;
  return { ok: true, value: structuredContent ?? textOfContent(content), content, durationMs };
}

function failure(code: ToolFailureCode, message: string, started: number): ToolFailure {
  return { ok: false, code, message, durationMs: performance.now() - started };
}
