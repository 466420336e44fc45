import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { GATEWAY_CONFIG, GatewayConfig } from '../config/gateway-config';
import { GatewayError, GatewayErrorCode } from '../core/errors/gateway-error';
import { activeTraceMeta, runInTraceContext, TraceMeta, traceContextOf } from '../core/tracing/trace-context';
import type { ToolCallContext, ToolDefinition } from '../core/tools/tool-definition';
import { ToolCallScope } from '../core/tools/tool-call-scope';
import { ToolCallService } from '../core/tools/tool-call.service';
import { ToolError } from '../core/tools/tool-error';
import type { CatalogueEntry } from '../core/tools/tool-invoker';
import type { CatalogueSource } from '../core/tools/tool-registry.service';
import { ToolRegistryService } from '../core/tools/tool-registry.service';
import type { DeviceEntry } from './device-entry';
import { agentToolName, parseAgentToolName } from './device-id';
import { FLEET_STORES, FleetStores } from './fleet-stores';
import { LocalDevices } from './local-devices';
import { Reachability } from './reachability';
import { ReplicaMessaging } from './replicas/replica-messaging';

/** The protocol calls run for another instance are counted under, in metrics, the audit log and traces. */
export const FLEET_PROTOCOL = 'fleet';

/** The request that runs a device's tool on the instance holding the device. */
const CALL = 'call';

/** A device tool's call as it travels to the instance holding the device: who asks, and the trace it belongs to. */
interface RelayedCall {
  device: string;
  tool: string;
  args: Record<string, unknown>;
  principal?: string;
  trace?: TraceMeta;
}

/** A device's tools compiled for agents, kept while its directory entry stays the same object. */
interface CompiledDevice {
  entry: DeviceEntry;
  tools: Map<string, CatalogueEntry>;
}

/**
 * The tools of online devices, as agents see them in the catalogue (MCP, UTCP, LiteMCP, HTTP):
 * each under `<device>__<tool>` (see `agentToolName`), for the principals that may reach the
 * device, with the device's schema checked like every tool's and `CLIENT_TOOL_TIMEOUT` as its
 * time limit. A device's tool is compiled once per instance: where the device is connected, the
 * check its own model's view was compiled with is reused (`DeviceLink.validatorOf`).
 *
 * A call runs on the device wherever it is connected. On another instance it runs through that
 * instance's invoker too (protocol `fleet`, in the agent's name, in the caller's trace), so it is
 * audited, metered and traced where it ran as well as where it was asked.
 */
@Injectable()
export class DeviceToolCatalogue implements CatalogueSource, OnModuleInit {
  private readonly logger = new Logger('Fleet');
  private readonly compiled = new Map<string, CompiledDevice>();

  constructor(
    @Inject(FLEET_STORES) private readonly stores: FleetStores,
    private readonly reachability: Reachability,
    private readonly local: LocalDevices,
    private readonly messaging: ReplicaMessaging,
    private readonly registry: ToolRegistryService,
    private readonly toolCalls: ToolCallService,
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
  ) {
    messaging.handle(CALL, (call: RelayedCall, { signal }) => this.runHere(call, signal));
  }

  onModuleInit(): void {
    this.registry.addSource(this);
    this.stores.directory.changes.subscribe(({ id, entry }) => this.changed(id, entry));
  }

  list(principal: string | undefined): ToolDefinition[] {
    const tools: ToolDefinition[] = [];
    for (const entry of this.reachability.visibleDevices({ principal })) {
      if (entry.tools.length === 0) continue;
      for (const compiled of this.toolsOf(entry).values()) tools.push(compiled.tool);
    }
    return tools;
  }

  entry(name: string, principal: string | undefined): CatalogueEntry | undefined {
    const parsed = parseAgentToolName(name);
    const device = parsed && this.reachability.visibleDevice({ principal }, parsed.deviceId);
    return device ? this.toolsOf(device).get(name) : undefined;
  }

  /** One device's tools as agents see them, by agent-facing name (also the device's own MCP endpoint's). */
  toolsOf(entry: DeviceEntry): Map<string, CatalogueEntry> {
    const cached = this.compiled.get(entry.id);
    if (cached?.entry === entry) return cached.tools;
    const link = entry.instance === this.messaging.instanceId ? this.local.get(entry.id) : undefined;
    const tools = new Map<string, CatalogueEntry>();
    for (const tool of entry.tools) {
      const name = agentToolName(entry.id, tool.name);
      try {
        const spec = {
          name,
          description: tool.description,
          inputSchema: tool.inputSchema,
          source: `device:${entry.id}` as const,
          timeoutMs: this.config.clientTools.timeoutMs,
          handler: (args: Record<string, unknown>, context: ToolCallContext) => this.callTool(entry.id, tool.name, args, context),
        };
        tools.set(
          name,
          this.registry.compile(spec, () => undefined, link?.validatorOf?.(tool.name)),
        );
      } catch (error) {
        this.logger.warn(`Device ${entry.id}: tool "${tool.name}" is not offered to agents: ${(error as Error).message}`);
      }
    }
    this.compiled.set(entry.id, { entry, tools });
    return tools;
  }

  /** Runs a device's tool (the catalogue checked the arguments) where the device is connected. */
  private callTool(deviceId: string, toolName: string, args: Record<string, unknown>, context: ToolCallContext): Promise<unknown> {
    const link = this.local.get(deviceId);
    if (link) return link.callTool(toolName, args, context.signal);
    const entry = this.stores.directory.lookup(deviceId);
    if (!entry) return Promise.reject(offline(deviceId));
    const call: RelayedCall = { device: deviceId, tool: toolName, args, principal: context.principal, trace: activeTraceMeta() };
    return this.messaging.request(entry.instance, CALL, call, { signal: context.signal, about: entry });
  }

  /** A call another instance relayed for a device held here: through this instance's invoker, in the caller's trace. */
  private async runHere(call: RelayedCall, signal: AbortSignal): Promise<unknown> {
    if (!this.local.get(call.device)) throw offline(call.device);
    const scope = ToolCallScope.ofRelayed(FLEET_PROTOCOL, call.principal, signal);
    const outcome = await runInTraceContext(traceContextOf(call.trace), () => this.toolCalls.call(scope, agentToolName(call.device, call.tool), call.args));
    if (outcome.ok) return outcome.value;
    throw outcome.code === GatewayErrorCode.TOOL_EXECUTION_FAILED
      ? new ToolError(outcome.message, outcome.details)
      : new GatewayError(outcome.code, outcome.message);
  }

  private changed(id: string, entry: DeviceEntry | undefined): void {
    const before = this.compiled.get(id);
    this.compiled.delete(id);
    const had = before ? [...before.tools.values()].map((compiled) => compiled.tool) : [];
    const has = entry && entry.tools.length > 0 ? [...this.toolsOf(entry).values()].map((compiled) => compiled.tool) : [];
    for (const tool of had) this.registry.sourceChanged({ type: 'removed', tool });
    for (const tool of has) this.registry.sourceChanged({ type: 'added', tool });
  }
}

function offline(deviceId: string): GatewayError {
  return new GatewayError(GatewayErrorCode.DEVICE_OFFLINE, `Device "${deviceId}" is not connected`);
}
