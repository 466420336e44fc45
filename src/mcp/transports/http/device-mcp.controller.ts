import { All, Param, Req, Res } from '@nestjs/common';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { Request, Response } from 'express';
import type { AuthenticatedRequest } from '../../../core/auth/bearer-auth.guard';
import { GatewayError, GatewayErrorCode } from '../../../core/errors/gateway-error';
import { CallScope, ProtocolController } from '../../../core/http/protocol-controller.decorator';
import type { ToolCallScope } from '../../../core/tools/tool-call-scope';
import { agentToolName } from '../../../fleet/device-id';
import { DeviceToolCatalogue } from '../../../fleet/device-tool-catalogue';
import { Reachability } from '../../../fleet/reachability';
import { McpAuthGuard } from '../../mcp-auth.guard';
import { McpEnabledGuard } from '../../mcp-enabled.guard';
import { MCP_PROTOCOL } from '../../mcp.constants';
import type { McpToolView } from '../../methods/mcp-methods';
import { Sdk1Binder } from '../../revisions/2025/sdk1-binder';

/**
 * One device as an MCP server of its own, `/mcp/devices/<id>` (Streamable HTTP): its tools for
 * agents under their own names (`light_on`, not `kitchen__light_on`), for a home-automation system
 * or an assistant pointed at one device. Stateless (no `Mcp-Session-Id`: POST only, every request
 * complete in itself), so it answers the same on every replica; the device is looked up on each
 * request, and one that went offline is a 404 JSON-RPC error.
 */
@ProtocolController({ protocol: MCP_PROTOCOL, path: 'mcp/devices', before: [McpEnabledGuard], auth: McpAuthGuard })
export class DeviceMcpController {
  constructor(
    private readonly binder: Sdk1Binder,
    private readonly reachability: Reachability,
    private readonly deviceTools: DeviceToolCatalogue,
  ) {}

  @All(':id')
  async serve(
    @Param('id') id: string,
    @Req() request: Request & AuthenticatedRequest,
    @Res() response: Response,
    @CallScope() scope: ToolCallScope,
  ): Promise<void> {
    if (request.method !== 'POST') {
      response.setHeader('Allow', 'POST');
      throw new GatewayError(GatewayErrorCode.INVALID_MESSAGE, `A device's MCP endpoint is stateless: POST only, not ${request.method}`);
    }
    const device = this.reachability.visibleDevice({ principal: request.principal }, id);
    if (!device) throw new GatewayError(GatewayErrorCode.DEVICE_OFFLINE, `Device "${id}" is not connected`);
    const tools = this.deviceTools.toolsOf(device);
    const view: McpToolView = {
      list: () => [...tools.values()].map(({ tool }) => ({ ...tool, name: tool.name.slice(tool.name.indexOf('__') + 2) })),
      catalogueName: (name) => (tools.has(agentToolName(id, name)) ? agentToolName(id, name) : undefined),
    };
    const server = this.binder.createServer(scope, view);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    response.once('close', () => void server.close().catch(() => undefined));
    await server.connect(transport);
    await transport.handleRequest(request, response, request.body);
  }
}
