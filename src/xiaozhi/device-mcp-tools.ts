import { Injectable, Logger } from '@nestjs/common';
import { ClientToolsService } from '../llm-gateway/client-tools.service';
import { DeviceLinks } from '../llm-gateway/device-link';
import { DeviceMcpClient, DeviceMcpProblem, DeviceMcpTool } from './device-mcp-client';
import { VoiceSessions } from './voice-sessions';
import type { XiaozhiConnection } from './xiaozhi-connection';

/**
 * The catalogue's name for a device tool: the firmware's dotted names (`self.light.set_rgb`) with
 * `_` for `.`, since OpenAI-compatible models accept only letters, digits, `_` and `-` in a
 * function's name, and the agent-facing name (`<device>__<tool>`) must read back to one tool.
 */
export const catalogueNameOf = (deviceName: string): string => deviceName.replaceAll('.', '_');

/**
 * A xiaozhi device's own tools, when its hello announced `features.mcp`: listed over its MCP
 * (`initialize`, `tools/list`), registered as the connection's device tools (offered to its
 * model, and to agents of the fleet under the device's name, as an LLM-gateway device's
 * `register_tools` are), and called with `tools/call` under the catalogue's time limit for
 * device tools. A tool the catalogue refuses (a name too long, two names that map to one) is left
 * out and logged; the rest are registered.
 */
@Injectable()
export class DeviceMcpTools {
  private readonly logger = new Logger('Xiaozhi');

  constructor(
    private readonly clientTools: ClientToolsService,
    private readonly links: DeviceLinks,
    private readonly voices: VoiceSessions,
  ) {}

  /** Starts the device's MCP client and registers what it lists; the connection's close ends its waits. */
  start(connection: XiaozhiConnection): void {
    const { state } = connection;
    const deviceName = state.deviceId ?? connection.id;
    const client = new DeviceMcpClient(
      deviceName,
      (payload) => connection.send({ session_id: state.helloSessionId, type: 'mcp', payload }),
      (problem: DeviceMcpProblem) => this.voices.count(problem),
    );
    state.mcp = client;
    state.toolRunner = (name, args, context) => client.call(state.deviceToolNames.get(name) ?? name, args, context);
    connection.onClose(() => client.close());
    client.discover(connection.signal).then(
      (tools) => this.register(connection, tools),
      (error: Error) => connection.isOpen && this.logger.warn(`Device ${deviceName}: its MCP tools could not be listed: ${error.message}`),
    );
  }

  private register(connection: XiaozhiConnection, tools: DeviceMcpTool[]): void {
    const { state } = connection;
    const named = tools.filter((tool) => {
      const name = catalogueNameOf(tool.name);
      if (state.deviceToolNames.has(name)) return false;
      state.deviceToolNames.set(name, tool.name);
      return true;
    });
    let registered;
    try {
      registered = this.clientTools.register(
        connection,
        named.map((tool) => ({ name: catalogueNameOf(tool.name), description: tool.description, parameters: tool.inputSchema })),
      );
    } catch (error) {
      this.logger.warn(`Device ${state.deviceId}: its MCP tools are not offered: ${(error as Error).message}`);
      return;
    }
    for (const refused of registered.filter((tool) => tool.status === 'failed'))
      this.logger.warn(`Device ${state.deviceId}: tool ${refused.name} not offered: ${refused.error}`);
    if (registered.some((tool) => tool.status === 'registered')) this.links.toolsChanged(connection);
  }
}
