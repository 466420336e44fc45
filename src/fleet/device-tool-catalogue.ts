import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { GATEWAY_CONFIG, GatewayConfig } from '../config/gateway-config';
import type { CatalogueSource } from '../core/tools/tool-registry.service';
import { ToolRegistryService } from '../core/tools/tool-registry.service';
import type { ToolDefinition } from '../core/tools/tool-definition';
import type { CatalogueEntry } from '../core/tools/tool-invoker';
import type { DeviceEntry } from './device-entry';
import { agentToolName, parseAgentToolName } from './device-id';
import { FleetService } from './fleet.service';

/** A device's tools compiled for agents, kept while its directory entry stays the same object. */
interface CompiledDevice {
  entry: DeviceEntry;
  tools: Map<string, CatalogueEntry>;
}

/**
 * The tools of online devices, as agents see them in the catalogue (MCP, UTCP, LiteMCP, HTTP):
 * each under `<device>__<tool>` (see `agentToolName`), for the principals that may reach the
 * device, with the device's schema checked like every tool's and `CLIENT_TOOL_TIMEOUT` as its
 * time limit; a call runs on the device wherever it is connected. Lists change as devices come
 * and go (MCP clients get `notifications/tools/list_changed`).
 */
@Injectable()
export class DeviceToolCatalogue implements CatalogueSource, OnModuleInit {
  private readonly logger = new Logger('Fleet');
  private readonly compiled = new Map<string, CompiledDevice>();

  constructor(
    private readonly fleet: FleetService,
    private readonly registry: ToolRegistryService,
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
  ) {}

  onModuleInit(): void {
    this.registry.addSource(this);
    this.fleet.directory.changes.subscribe(({ id, entry }) => this.changed(id, entry));
  }

  list(principal: string | undefined): ToolDefinition[] {
    const tools: ToolDefinition[] = [];
    for (const entry of this.fleet.visibleDevices({ principal })) {
      if (entry.tools.length === 0) continue;
      for (const compiled of this.toolsOf(entry).values()) tools.push(compiled.tool);
    }
    return tools;
  }

  entry(name: string, principal: string | undefined): CatalogueEntry | undefined {
    const parsed = parseAgentToolName(name);
    const device = parsed && this.fleet.visibleDevice({ principal }, parsed.deviceId);
    return device ? this.toolsOf(device).get(name) : undefined;
  }

  /** One device's tools as agents see them, by agent-facing name (also the device's own MCP endpoint's). */
  toolsOf(entry: DeviceEntry): Map<string, CatalogueEntry> {
    const cached = this.compiled.get(entry.id);
    if (cached?.entry === entry) return cached.tools;
    const tools = new Map<string, CatalogueEntry>();
    for (const tool of entry.tools) {
      const name = agentToolName(entry.id, tool.name);
      try {
        tools.set(
          name,
          this.registry.compile(
            {
              name,
              description: tool.description,
              inputSchema: tool.inputSchema,
              source: `device:${entry.id}`,
              timeoutMs: this.config.clientTools.timeoutMs,
              handler: (args, context) => this.fleet.callTool(entry.id, tool.name, args, context),
            },
            () => undefined,
          ),
        );
      } catch (error) {
        this.logger.warn(`Device ${entry.id}: tool "${tool.name}" is not offered to agents: ${(error as Error).message}`);
      }
    }
    this.compiled.set(entry.id, { entry, tools });
    return tools;
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
