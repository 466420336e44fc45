import { Inject, Injectable, Logger, OnModuleInit, Optional } from '@nestjs/common';
import { GATEWAY_CONFIG, GatewayConfig } from '../../config/gateway-config';
import { ContextCatalogueService } from '../context/context-catalogue.service';
import { GatewayError } from '../errors/gateway-error';
import type { ContextRequest, ContextRequestWatch, ContextRequestWatcher } from '../context/context-source';
import type { ToolOutcome } from '../tools/tool-definition';
import type { InvokeOptions, PreparedToolCall, ToolCallWatch, ToolCallWatcher } from '../tools/tool-invoker';
import { ToolRegistryService } from '../tools/tool-registry.service';
import { clipForAudit } from './audit-clip';
import { PrincipalLike, principalLabel } from './principal-label';

/** The logger context of every audit line, so operators can route them apart from the rest. */
export const AUDIT_LOG_CONTEXT = 'Audit';

/** One request for what an upstream offers besides tools: a resource read, a prompt, a completion (MCP). */
export interface ContextRequestAuditLine {
  event: 'context_request';
  token: string;
  kind: ContextRequest['kind'];
  /** The URI, or the prompt's name (a completion's: what it completes). */
  target: string;
  outcome: string;
  duration_ms: number;
}

/** One tool call, whatever the protocol and the tool's source. */
export interface ToolCallAuditLine {
  event: 'tool_call';
  /** The token's name, or a non-secret label of it (see {@link principalLabel}). */
  token: string;
  /** `llm`, `mcp`, `litemcp`, `utcp`; `internal` for calls made in-process (a module's own code). */
  protocol: string;
  tool: string;
  /** `builtin`, `module`, `mcp:<server>` or `client:<connection>`; absent for a tool the catalogue lacks. */
  source?: string;
  /** `ok`, or the failure's code. */
  outcome: string;
  duration_ms: number;
  turn_id?: string;
  session_id?: string;
  connection_id?: string;
  /** With `AUDIT_LOG_ARGUMENTS` only, clipped. */
  arguments?: string;
  /** With `AUDIT_LOG_ARGUMENTS` only, clipped: the value, or the failure's message. */
  result?: string;
}

/** One LLM-gateway turn, from its `text_input` to its `status: idle`. */
export interface TurnAuditLine {
  event: 'turn';
  token: string;
  protocol: string;
  turn_id: string;
  session_id?: string;
  /** `ok` (answered), `cancelled` (by the client), `aborted` (the connection closed) or the error's code. */
  outcome: string;
  duration_ms: number;
  /** Tool calls the model made in the turn (each has its own line). */
  tool_calls: number;
  /** With `AUDIT_LOG_ARGUMENTS` only, clipped: what the user said, and the answer. */
  input?: string;
  answer?: string;
}

/** One change a principal made to how the fleet is run (firmware entries, rollouts): who, what, on which record, and whether it took. */
export interface FleetChangeAuditLine {
  event: 'fleet_change';
  token: string;
  /** `firmware_add`, `rollout_widen`, ... */
  action: string;
  /** The record's id. */
  target: string;
  /** `ok`, or the refusal's code. */
  outcome: string;
  /** What changed, in a few words (`percent 10 -> 30`): never a secret. */
  details?: string;
}

/** A fleet change as its service tells it. */
export interface FleetChangeRecord {
  principal: PrincipalLike;
  action: string;
  target: string;
  outcome: string;
  details?: string;
}

/** What the turn service tells about a turn that has ended. */
export interface TurnRecord {
  principal: PrincipalLike;
  /** The protocol the turn was held over (`llm`, `xiaozhi`). */
  protocol: string;
  turnId: string;
  sessionId?: string;
  outcome: string;
  durationMs: number;
  toolCalls: number;
  input: string;
  answer?: string;
}

const roundMs = (ms: number): number => Math.round(ms * 10) / 10;

/** `key=value` pairs for the text log format, values quoted when they need it. */
function asText(line: object): string {
  return Object.entries(line)
    .filter(([, value]) => value !== undefined)
    .map(([key, value]) => `${key}=${typeof value === 'string' && !/[\s"=]/.test(value) ? value : JSON.stringify(value)}`)
    .join(' ');
}

/**
 * The audit log: one line per tool call (every protocol, every source: server tools, upstream
 * MCP tools, device tools) and one per LLM turn, under the logger context `Audit`, at INFO.
 * It hooks the two points every call and turn pass (the tool invoker, the turn service), so no
 * protocol can forget it. Arguments, results, what the user said and the answer are personal
 * data: they are written only with `AUDIT_LOG_ARGUMENTS=true`, and clipped even then. With
 * `AUDIT_LOG=false`, or a log level above INFO, nothing is built at all.
 */
@Injectable()
export class AuditService implements ToolCallWatcher, ContextRequestWatcher, OnModuleInit {
  private readonly logger = new Logger(AUDIT_LOG_CONTEXT);
  /** Whether lines are written: audit on, and INFO lines let through. */
  readonly enabled: boolean;
  private readonly withArguments: boolean;
  private readonly json: boolean;

  constructor(
    @Inject(GATEWAY_CONFIG) config: GatewayConfig,
    private readonly registry: ToolRegistryService,
    @Optional() private readonly contextCatalogue?: ContextCatalogueService,
  ) {
    this.enabled = config.audit.enabled && config.server.logLevels.includes('log');
    this.withArguments = config.audit.withArguments;
    this.json = config.server.logFormat === 'json';
  }

  onModuleInit(): void {
    if (!this.enabled) return;
    this.registry.watch(this);
    this.contextCatalogue?.watch(this);
  }

  started(call: PreparedToolCall, options: InvokeOptions): ToolCallWatch {
    return { ended: (outcome) => this.toolCall(call, options, outcome) };
  }

  contextRequestStarted(request: ContextRequest): ContextRequestWatch {
    return {
      ended: (outcome, durationMs) =>
        this.write({
          event: 'context_request',
          token: principalLabel(request.principal),
          kind: request.kind,
          target: clipForAudit(request.target),
          outcome,
          duration_ms: roundMs(durationMs),
        }),
    };
  }

  /** Writes a turn's line. */
  turn(record: TurnRecord): void {
    if (!this.enabled) return;
    const line: TurnAuditLine = {
      event: 'turn',
      token: principalLabel(record.principal),
      protocol: record.protocol,
      turn_id: record.turnId,
      session_id: record.sessionId,
      outcome: record.outcome,
      duration_ms: roundMs(record.durationMs),
      tool_calls: record.toolCalls,
    };
    if (this.withArguments) {
      line.input = clipForAudit(record.input);
      if (record.answer !== undefined) line.answer = clipForAudit(record.answer);
    }
    this.write(line);
  }

  /** Writes a fleet change's line. */
  fleetChange(record: FleetChangeRecord): void {
    if (!this.enabled) return;
    this.write({
      event: 'fleet_change',
      token: principalLabel(record.principal),
      action: record.action,
      target: clipForAudit(record.target),
      outcome: record.outcome,
      ...(record.details !== undefined && { details: clipForAudit(record.details) }),
    });
  }

  /**
   * Runs a fleet change and audits it once it is over: `ok`, or the refusal's code
   * (`INTERNAL_ERROR` for anything but a `GatewayError`), which is rethrown. `targetOf` names
   * the record a change made (a new record's id is known only once it exists).
   */
  async auditedFleetChange<T>(record: Omit<FleetChangeRecord, 'outcome'>, change: () => Promise<T>, targetOf?: (done: T) => string): Promise<T> {
    try {
      const done = await change();
      this.fleetChange({ ...record, ...(targetOf && { target: targetOf(done) }), outcome: 'ok' });
      return done;
    } catch (error) {
      this.fleetChange({ ...record, outcome: error instanceof GatewayError ? error.code : 'INTERNAL_ERROR' });
      throw error;
    }
  }

  private toolCall(call: PreparedToolCall, options: InvokeOptions, outcome: ToolOutcome): void {
    const line: ToolCallAuditLine = {
      event: 'tool_call',
      token: principalLabel(options.principal),
      protocol: options.protocol ?? 'internal',
      tool: call.name,
      source: call.entry?.tool.source,
      outcome: outcome.ok ? 'ok' : outcome.code,
      duration_ms: roundMs(outcome.durationMs),
      turn_id: options.turnId,
      session_id: options.sessionId,
      connection_id: options.connectionId,
    };
    if (this.withArguments) {
      line.arguments = clipForAudit(call.args);
      line.result = clipForAudit(outcome.ok ? outcome.value : outcome.message);
    }
    this.write(line);
  }

  private write(line: ToolCallAuditLine | TurnAuditLine | ContextRequestAuditLine | FleetChangeAuditLine): void {
    this.logger.log(this.json ? line : asText(line));
  }
}
