import type { Logger } from '@nestjs/common';
import { LOG_LEVEL_META_KEY, Progress } from '@modelcontextprotocol/client';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { GatewayError, GatewayErrorCode } from '../core/errors/gateway-error';
import type { ToolContentResult } from '../core/tools/tool-content';
import type { ToolCaller, ToolSource } from '../core/tools/tool-definition';
import { ToolError } from '../core/tools/tool-error';
import type { ToolRegistryService } from '../core/tools/tool-registry.service';
import { activeTraceMeta } from '../core/tracing/trace-context';
import { describeOversizedAnswer, oversizedAnswerOf } from './oversized-answer';
import type { UpstreamClient } from './upstream-client';
import { describeUpstreamError, isConnectionClosed, refusalOf } from './upstream-errors';
import { errorText, isSameTool, PlannedTool, planTools, SkippedTool, toContentResult } from './upstream.mapper';
import type { UpstreamServerConfig } from './upstream-servers.config';
import type { UpstreamCallers } from './upstream-callers';
import { redactStrings } from '../core/logging/redact';

const SDK_TIMEOUT_MARGIN_MS = 1000;

/** What the tool sync needs of the connection that keeps the upstream up. */
export interface UpstreamLinkState {
  /** The live client, while the upstream is connected. */
  connectedClient(): UpstreamClient | undefined;
  /** A call could not reach the upstream at all: the connection is gone. */
  lost(client: UpstreamClient, error: unknown): void;
  /** A re-read of the tools failed: check whether the upstream is still there. */
  checkAlive(client: UpstreamClient): Promise<void>;
}

/**
 * One upstream's tools in the catalogue, under source `mcp:<name>`: read page by page, kept in
 * line with the upstream's list (its `list_changed` re-reads it), withdrawn when it goes away,
 * and called on it, every failure a clean tool error.
 */
export class UpstreamToolSync {
  /** The upstream's tools in the catalogue, by catalogue name (each with the upstream's own name, which calls send). */
  private offered = new Map<string, PlannedTool>();
  private skippedTools: SkippedTool[] = [];
  private refreshes: Promise<void> = Promise.resolve();
  private refreshQueued = false;
  private inFlight = 0;

  constructor(
    private readonly server: UpstreamServerConfig,
    private readonly source: ToolSource,
    private readonly registry: ToolRegistryService,
    private readonly link: UpstreamLinkState,
    private readonly logger: Logger,
    private readonly redact: (text: string) => string,
    private readonly callers: UpstreamCallers,
  ) {}

  private get label(): string {
    return `MCP server "${this.server.name}"`;
  }

  /** How many of its tools the catalogue holds. */
  get count(): number {
    return this.offered.size;
  }

  get skipped(): SkippedTool[] {
    return this.skippedTools;
  }

  /** Calls sent and not yet answered. */
  get callsInFlight(): number {
    return this.inFlight;
  }

  /** Every tool the upstream offers, all pages, read afresh (and kept by the SDK, which checks each call's structured result against its tool's output schema). */
  async list(client: UpstreamClient): Promise<Tool[]> {
    if (!client.getServerCapabilities()?.tools) return [];
    const { tools } = await client.listTools(undefined, { timeout: this.server.connectTimeoutMs, cacheMode: 'refresh' });
    return tools as Tool[];
  }

  /**
   * Brings the catalogue in line with the upstream's list: tools it no longer offers, or offers
   * differently, are removed; new ones added. A tool the catalogue refuses (its name is taken,
   * its schema is not JSON Schema) is skipped and reported, the others still join.
   */
  sync(tools: Tool[]): void {
    const planned = planTools(this.server.prefix, tools);
    const wanted = new Map(planned.map((tool) => [tool.name, tool]));
    const timeoutMs = this.server.callTimeoutMs;
    const current = new Map(
      this.registry
        .list()
        .filter((tool) => tool.source === this.source)
        .map((tool) => [tool.name, tool]),
    );
    for (const [name, tool] of current) {
      const next = wanted.get(name);
      if (!next || !isSameTool(tool, next, timeoutMs)) {
        this.registry.unregister(name);
        current.delete(name);
      }
    }
    this.offered = new Map();
    this.skippedTools = [];
    for (const tool of planned) {
      if (!current.has(tool.name)) {
        try {
          this.registry.register({
            name: tool.name,
            description: tool.description,
            inputSchema: tool.inputSchema,
            outputSchema: tool.outputSchema,
            presentation: tool.presentation,
            longRunning: tool.longRunning,
            timeoutMs,
            source: this.source,
            handler: (args, { signal, caller }) => this.call(tool.name, args, signal, caller),
          });
        } catch (error) {
          this.skippedTools.push({ tool: tool.upstreamName, reason: (error as Error).message });
          continue;
        }
      }
      this.offered.set(tool.name, tool);
    }
    for (const { tool, reason } of this.skippedTools) this.logger.warn(`${this.label}: tool "${tool}" is not offered: ${reason}`);
  }

  /** The upstream went away: its tools leave the catalogue; returns how many. */
  withdraw(): number {
    this.offered.clear();
    return this.registry.unregisterSource(this.source);
  }

  /** Re-reads the tool list after `list_changed`; notifications that arrive meanwhile make one more read. */
  queueRefresh(client: UpstreamClient): void {
    if (this.refreshQueued) return;
    this.refreshQueued = true;
    this.refreshes = this.refreshes.then(async () => {
      this.refreshQueued = false;
      if (client !== this.link.connectedClient()) return;
      try {
        const tools = await this.list(client);
        if (client === this.link.connectedClient()) this.sync(tools);
      } catch (error) {
        this.logger.warn(`${this.label}: could not re-read its tools: ${this.redact(describeUpstreamError(error))}`);
        await this.link.checkAlive(client);
      }
    });
  }

  /**
   * Runs one catalogue call on the upstream; every failure becomes a clean tool error. The
   * upstream's progress goes to `caller` (the SDK asks for it with a progress token of its own),
   * and so do its log messages and requests while the call runs ({@link UpstreamCallers}).
   */
  private async call(name: string, args: Record<string, unknown>, signal: AbortSignal, caller?: ToolCaller): Promise<ToolContentResult> {
    const client = this.link.connectedClient();
    const tool = this.offered.get(name);
    if (!client || tool === undefined) {
      throw new GatewayError(GatewayErrorCode.TOOL_UNAVAILABLE, `${this.label} is not connected; try again later`);
    }
    let result: CallToolResult;
    this.inFlight += 1;
    try {
      // The registry owns the time limit (it aborts `signal`); the SDK's own timer is only a backstop behind it.
      const options = {
        signal,
        timeout: this.server.callTimeoutMs + SDK_TIMEOUT_MARGIN_MS,
        ...(caller?.progress && { onprogress: (update: Progress) => this.callers.relay(caller, () => caller.progress?.(update)) }),
      };
      // The call's span (when traced) goes on to the upstream in `_meta`, so its spans join the trace.
      // A 2026 upstream logs only at the level a request names; the caller's own level is applied as its log messages are relayed.
      const meta = { ...activeTraceMeta(), ...(caller?.log && client.modern && { [LOG_LEVEL_META_KEY]: 'debug' }) };
      // A 2026 client may answer before it is asked; its answers go to the 2026 upstream that would ask.
      const unasked = client.modern ? caller?.takeUnaskedAnswers?.() : undefined;
      const params = {
        name: tool.upstreamName,
        arguments: args,
        ...(unasked && Object.keys(unasked).length > 0 && { inputResponses: unasked }),
        ...(Object.keys(meta).length > 0 && { _meta: meta }),
      };
      const call = (): Promise<unknown> =>
        tool.taskRequired ? client.callToolAsTask(params, this.server.callTimeoutMs, options) : client.callTool(params, options);
      result = (await this.callers.during(caller, signal, call)) as CallToolResult;
    } catch (error) {
      throw this.callFailure(client, error, signal);
    } finally {
      this.inFlight -= 1;
    }
    if (result.isError) throw new ToolError(this.redact(errorText(result)) || `${this.label} reported a failure without a message`);
    return toContentResult(redactStrings(result, this.redact));
  }

  private callFailure(client: UpstreamClient, error: unknown, signal: AbortSignal): unknown {
    if (signal.aborted) return error; // the registry's own timeout or the caller's cancellation
    const oversized = oversizedAnswerOf(error);
    if (oversized) return new ToolError(`${this.label}: ${describeOversizedAnswer(oversized)}`);
    if (isConnectionClosed(error)) return new GatewayError(GatewayErrorCode.TOOL_UNAVAILABLE, `${this.label} went away during the call`);
    const refusal = refusalOf(error);
    if (refusal) return new ToolError(`${this.label}: ${this.redact(refusal.message)}`);
    // Not an answer of the upstream's: the transport failed, so the connection is gone.
    this.link.lost(client, error);
    return new GatewayError(GatewayErrorCode.TOOL_UNAVAILABLE, `${this.label} cannot be reached: ${this.redact(describeUpstreamError(error))}`);
  }
}
