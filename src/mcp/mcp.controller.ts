import { All, Controller, Req, Res, UseGuards } from '@nestjs/common';
import type { Request, Response } from 'express';
import type { AuthenticatedRequest } from '../core/auth/bearer-auth.guard';
import { GatewayProtocol } from '../core/auth/gateway-protocol.decorator';
import { McpAuthGuard } from './mcp-auth.guard';
import { McpEnabledGuard } from './mcp-enabled.guard';
import { McpHttpSessions } from './http/mcp-http-sessions.service';

/**
 * MCP Streamable HTTP at `/mcp`, so standard MCP clients and inspectors connect with a URL and a
 * bearer token (see `McpHttpSessions`). Failures before it (auth, an unreadable body) are JSON-RPC error
 * bodies, by the format `McpModule` registers with `HttpErrorFormats`.
 */
@Controller('mcp')
@GatewayProtocol('mcp')
@UseGuards(McpEnabledGuard, McpAuthGuard)
export class McpController {
  constructor(private readonly sessions: McpHttpSessions) {}

  @All()
  serve(@Req() request: Request & AuthenticatedRequest, @Res() response: Response): Promise<void> {
    return this.sessions.handle(request, response, request.body);
  }
}
